// .nsys-rep reports: exported to SQLite by the `nsys` command, once per content, into a cache
// folder (exportNsysReport in nsys_importer.h). The report's own container is not read.
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "file_io.h"
#include "nsys_importer.h"
#include "trace_error.h"

extern char** environ;

namespace ddpscope::trace {

namespace fs = std::filesystem;

namespace {

std::optional<std::string> findOnPath(const std::string& program) {
  const char* path = std::getenv("PATH");
  if (!path) return std::nullopt;
  std::string_view rest(path);
  while (!rest.empty()) {
    const auto colon = rest.find(':');
    const auto dir = rest.substr(0, colon);
    rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
    if (dir.empty()) continue;
    const std::string candidate = std::string(dir) + "/" + program;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return std::nullopt;
}

fs::path cacheFolder() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return fs::path(xdg) / "ddpscope" / "nsys";
  if (const char* home = std::getenv("HOME"); home && *home)
    return fs::path(home) / ".cache" / "ddpscope" / "nsys";
  return fs::temp_directory_path() / "ddpscope-nsys";
}

// The last `count` non-empty lines of a file, joined by "; " (what a failing command said last).
std::string lastLines(const fs::path& log, std::size_t count) {
  std::ifstream in(log);
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    lines.push_back(line.size() > 400 ? line.substr(0, 400) + "..." : line);
    if (lines.size() > count) lines.erase(lines.begin());
  }
  std::string out;
  for (const auto& l : lines)
    out += (out.empty() ? "" : "; ") + l;
  return out;
}

// The report's name in the cache (fileContentHash, 16 hex digits), so that a report moved,
// copied or rewritten in place is exported once per content. Polls cancel and reports progress
// (0 to `share`) as it reads.
std::string contentHash(const std::string& path, const ReadOptions& options, double share) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  return hashHex(fileContentHash(path, [&](std::uint64_t done) {
    if (options.cancel && options.cancel->load()) throw LoadCancelled();
    if (options.progress && !ec && size > 0)
      options.progress(share * static_cast<double>(done) / static_cast<double>(size));
  }));
}

}  // namespace

std::string exportNsysReport(const std::string& report, const ReadOptions& options) {
  std::error_code ec;
  if (!fs::is_regular_file(report, ec)) throw TraceError(report, kNoOffset, "no such file");
  const std::string sqlite = fs::path(report).replace_extension(".sqlite").string();
  const std::string command = "nsys export --type sqlite --output " + sqlite + " " + report;
  const auto nsys = findOnPath("nsys");
  if (!nsys) {
    throw TraceError(report, kNoOffset,
                     "is an Nsight Systems report, which ddpscope opens through its SQLite "
                     "export, and `nsys` is not on the PATH; export it with\n  " +
                         command + "\nand open " + sqlite);
  }
  const fs::path absolute = fs::absolute(report, ec);
  const auto folder = cacheFolder();
  fs::create_directories(folder, ec);
  if (ec) {
    throw TraceError(report, kNoOffset,
                     "cannot create the cache folder " + folder.string() + " (" + ec.message() +
                         "); export it yourself with\n  " + command);
  }
  // Hashing is the first tenth of the progress; the export (nsys says nothing while it works)
  // the rest.
  const fs::path out = folder / (contentHash(report, options, 0.1) + ".sqlite");
  if (fs::is_regular_file(out, ec)) {
    if (options.progress) options.progress(1.0);
    return out.string();
  }
  // Unique per process and thread: two loads of the same report never write one file.
  const std::string part = out.string() + "." + std::to_string(::getpid()) + "-" +
                           std::to_string(std::hash<std::thread::id>()(std::this_thread::get_id()));
  const fs::path tmp = part + ".part.sqlite";
  const fs::path log = part + ".out";
  const fs::path err = part + ".err";
  fs::remove(tmp, ec);
  std::vector<std::string> args = {
      *nsys,  "export",   "--type",     "sqlite",         "--force-overwrite",
      "true", "--output", tmp.string(), absolute.string()};
  std::vector<char*> argv;
  for (auto& a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  // nsys in a process group of its own: a cancel stops it and whatever it started.
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attributes, 0);
  pid_t child = 0;
  const int rc = posix_spawn(&child, nsys->c_str(), &actions, &attributes, argv.data(), environ);
  posix_spawnattr_destroy(&attributes);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    fs::remove(log, ec);
    fs::remove(err, ec);
    throw TraceError(
        report, kNoOffset,
        "cannot run " + *nsys + " (" + std::strerror(rc) + "); export it with\n  " + command);
  }
  if (options.progress) options.progress(0.1);
  int status = 0;
  for (;;) {
    const pid_t done = ::waitpid(child, &status, WNOHANG);
    if (done == child) break;
    if (done < 0 && errno != EINTR) {
      status = -1;  // the child cannot be waited for: not a success
      break;
    }
    if (options.cancel && options.cancel->load()) {
      // Asked to stop, then killed if still there after 2 s (the group, while nsys is unreaped).
      ::kill(-child, SIGTERM);
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
      pid_t gone = 0;
      while ((gone = ::waitpid(child, &status, WNOHANG)) == 0 &&
             std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      if (gone == 0) {
        ::kill(-child, SIGKILL);
        while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
        }
      }
      for (const auto& f : {tmp, log, err})
        fs::remove(f, ec);
      throw LoadCancelled();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::string why = lastLines(err, 5);
  if (why.empty()) why = lastLines(log, 1);
  fs::remove(log, ec);
  fs::remove(err, ec);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !fs::is_regular_file(tmp, ec)) {
    fs::remove(tmp, ec);
    std::string how = "wrote no export";
    if (status == -1) {
      how = "could not be waited for";
    } else if (!WIFEXITED(status)) {
      how = "was stopped by a signal";
    } else if (WEXITSTATUS(status) != 0) {
      how = "exited with status " + std::to_string(WEXITSTATUS(status));
    }
    throw TraceError(report, kNoOffset,
                     "nsys export " + how + (why.empty() ? std::string() : ": " + why) +
                         "; try it yourself:\n  " + command);
  }
  fs::rename(tmp, out, ec);
  if (ec) {
    const std::string why_not = ec.message();
    fs::remove(tmp, ec);
    throw TraceError(report, kNoOffset, "cannot keep the export: " + why_not);
  }
  if (options.progress) options.progress(1.0);
  return out.string();
}

}  // namespace ddpscope::trace
