#include "coordinator/staged_paths.h"

#include "absl/strings/str_cat.h"

namespace idlepool::coordinator {

void StagedPaths::Add(Paths& into, std::string_view path) {
  entries_made_ += into.files.emplace(path).second ? 1 : 0;
  for (size_t s = path.find('/'); s != std::string_view::npos; s = path.find('/', s + 1)) {
    entries_made_ += into.dirs.emplace(path.substr(0, s)).second ? 1 : 0;
  }
}

std::string StagedPaths::Clash(const Paths& taken, std::string_view path) const {
  if (taken.files.count(path) != 0) return "is staged twice";
  if (taken.dirs.count(path) != 0) return "is also a directory of another staged path";
  for (size_t s = path.find('/'); s != std::string_view::npos; s = path.find('/', s + 1)) {
    if (taken.files.count(path.substr(0, s)) != 0) {
      return absl::StrCat("lies under '", std::string(path.substr(0, s)), "', another staged file");
    }
  }
  return "";
}

void StagedPaths::AddJobPath(std::string_view path) { Add(job_, path); }

void StagedPaths::NextTask() {
  task_.files.clear();
  task_.dirs.clear();
}

std::string StagedPaths::Stage(std::string_view path) {
  std::string why = Clash(job_, path);
  if (why.empty()) why = Clash(task_, path);
  if (why.empty()) Add(task_, path);
  return why;
}

}  // namespace idlepool::coordinator
