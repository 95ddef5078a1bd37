#include "cli/report_command.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "report/timeline_svg.h"

namespace idlepool::cli {
namespace {

namespace fs = std::filesystem;

std::string ErrnoText(int err) { return std::strerror(err); }

// Writes all of `bytes` to `fd` (`name` for the error). Returns "" or what went wrong.
std::string WriteAll(int fd, std::string_view bytes, const std::string& name) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t w = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return absl::StrCat("cannot write ", name, ": ", ErrnoText(errno));
    done += static_cast<size_t>(w);
  }
  return "";
}

// Writes `bytes` to `path` through a temp file in the same directory, fsync, rename. Returns ""
// or what went wrong.
std::string WriteAtomically(const std::string& path, std::string_view bytes) {
  const std::string tmp = absl::StrCat(path, ".tmp.", ::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return absl::StrCat("cannot create ", tmp, ": ", ErrnoText(errno));
  std::string err = WriteAll(fd, bytes, tmp);
  if (err.empty() && ::fsync(fd) != 0) err = absl::StrCat("fsync ", tmp, ": ", ErrnoText(errno));
  ::close(fd);
  if (err.empty() && ::rename(tmp.c_str(), path.c_str()) != 0) {
    err = absl::StrCat("cannot rename ", tmp, " to ", path, ": ", ErrnoText(errno));
  }
  if (!err.empty()) ::unlink(tmp.c_str());
  return err;
}

// Writes the report where `path` leads: through a symlink to its target (the link stays), into
// a device, FIFO or socket directly (never replacing it: `--out /dev/stdout` works, and a root
// user's `--out /dev/full` does not turn the device into a file), else atomically.
std::string WriteReport(const std::string& path, std::string_view bytes) {
  std::error_code ec;
  fs::path target = path;
  if (fs::is_symlink(target, ec)) {
    target = fs::weakly_canonical(target, ec);
    if (ec) return absl::StrCat("cannot follow the link ", path, ": ", ec.message());
  }
  const fs::file_status st = fs::status(target, ec);
  if (!ec && fs::exists(st) && !fs::is_regular_file(st)) {
    if (fs::is_directory(st)) return absl::StrCat(path, " is a directory");
    int fd = ::open(target.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return absl::StrCat("cannot open ", path, ": ", ErrnoText(errno));
    std::string err = WriteAll(fd, bytes, path);
    ::close(fd);
    return err;
  }
  return WriteAtomically(target.string(), bytes);
}

}  // namespace

int RunReport(PoolClient& client, const ReportCommandOptions& o) {
  if (o.out.empty()) {
    std::fprintf(stderr, "idlepool: report: --out FILE is required (- for stdout)\n");
    return 2;
  }
  if (o.out != "-") {
    std::error_code ec;
    if (fs::is_directory(o.out, ec)) {
      std::fprintf(stderr, "idlepool: report: --out %s is a directory; give a file name\n",
                   o.out.c_str());
      return 2;
    }
    const fs::path dir = fs::path(o.out).parent_path();
    if (!dir.empty() && !fs::is_directory(dir, ec)) {
      std::fprintf(stderr, "idlepool: report: --out %s: no directory %s\n", o.out.c_str(),
                   dir.c_str());
      return 2;
    }
  }

  auto timeline = client.GetJobTimeline(o.job, o.max_attempts);
  if (!timeline.ok()) {
    const absl::Status& st = timeline.status();
    if (st.code() == absl::StatusCode::kUnimplemented) {
      std::fprintf(stderr,
                   "idlepool: report: job %llu: the coordinator does not serve job timelines "
                   "(it is older than this client)\n",
                   static_cast<unsigned long long>(o.job));
      return 1;
    }
    std::fprintf(stderr, "idlepool: %s\n", std::string(st.message()).c_str());
    return st.code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
  }

  const std::string doc =
      o.svg ? report::RenderTimelineSvg(*timeline) + "\n" : report::RenderReportHtml(*timeline);
  if (o.out == "-") {
    if (std::fwrite(doc.data(), 1, doc.size(), stdout) != doc.size() || std::fflush(stdout) != 0) {
      // A reader that stopped early (`| head`) is not an error worth a message.
      if (errno != EPIPE) {
        std::fprintf(stderr, "idlepool: report: cannot write to stdout: %s\n",
                     ErrnoText(errno).c_str());
      }
      return 1;
    }
    return 0;
  }
  if (std::string err = WriteReport(o.out, doc); !err.empty()) {
    std::fprintf(stderr, "idlepool: report: %s\n", err.c_str());
    return 1;
  }
  std::printf("job %llu: %s in %s (%d attempts%s)\n", static_cast<unsigned long long>(o.job),
              o.svg ? "timeline" : "report", o.out.c_str(), timeline->attempts_size(),
              timeline->truncated() ? ", the newest only" : "");
  return 0;
}

}  // namespace idlepool::cli
