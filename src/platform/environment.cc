#include "platform/environment.h"

#include <pwd.h>
#include <unistd.h>

extern char** environ;

namespace idlepool::platform {

std::vector<std::string> Environment() {
  std::vector<std::string> out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) out.emplace_back(*e);
  return out;
}

std::string UserName() {
  const uid_t uid = ::geteuid();
  passwd pw{};
  passwd* found = nullptr;
  std::vector<char> buf(16384);
  if (::getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) == 0 && found != nullptr &&
      found->pw_name != nullptr && found->pw_name[0] != '\0') {
    return found->pw_name;
  }
  return std::to_string(uid);
}

std::string_view EnvValue(const std::vector<std::string>& env, std::string_view name, bool* found) {
  std::string_view value;
  bool any = false;
  for (const std::string& e : env) {
    if (e.size() > name.size() && e[name.size()] == '=' && e.compare(0, name.size(), name) == 0) {
      value = std::string_view(e).substr(name.size() + 1);
      any = true;
    }
  }
  if (found != nullptr) *found = any;
  return value;
}

}  // namespace idlepool::platform
