// docs/design.md's tables against the code, the way method_roles_test keeps the role table true to
// the proto: the gRPC services and their RPCs (proto/*.proto, read through the descriptors), the
// store's schema version and tables (a fresh SQLite store, and the migration step that made each
// table), the scheduler core's events and decisions (src/core/events.h, src/core/scheduler.h) and
// the folders under src/ (the Layers block). A change that forgets the doc fails here, and each
// failure says what to add to (or remove from) which section of docs/design.md.
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include "core/events.h"
#include "core/scheduler.h"
#include "gtest/gtest.h"
#include "idlepool.pb.h"
#include "store/sqlite_schema.h"
#include "store/store.h"

namespace idlepool {
namespace {

namespace fs = std::filesystem;

const fs::path kRoot = IDLEPOOL_SOURCE_DIR;
constexpr char kDoc[] = "docs/design.md";

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// The lines of the doc's section whose heading is `heading` ("## Layers"), up to the next heading
// of any level. Empty when the doc has no such heading.
std::vector<std::string> Section(const std::string& heading) {
  std::vector<std::string> out;
  bool in = false;
  for (const std::string& line : Lines(ReadFile(kRoot / kDoc))) {
    if (line.rfind('#', 0) == 0) {
      if (in) break;
      in = line == heading;
      continue;
    }
    if (in) out.push_back(line);
  }
  return out;
}

std::string Where(const std::string& heading) {
  return std::string(kDoc) + ", section \"" + heading.substr(heading.find(' ') + 1) + "\"";
}

// The `Names` in backticks of `text` that are identifiers starting with a capital (RPCs,
// services, events), in order; `Name(Args)` counts as Name.
std::vector<std::string> CapitalizedNames(const std::string& text) {
  static const std::regex name(R"(`([A-Z][A-Za-z0-9_]*)(\([^`]*\))?`)");
  std::vector<std::string> out;
  for (std::sregex_iterator it(text.begin(), text.end(), name), end; it != end; ++it) {
    out.push_back((*it)[1].str());
  }
  return out;
}

// A markdown table row's cells, trimmed; empty when `line` is not a row.
std::vector<std::string> Cells(const std::string& line) {
  std::vector<std::string> out;
  if (line.rfind('|', 0) != 0) return out;
  std::string cell;
  for (size_t i = 1; i < line.size(); ++i) {
    if (line[i] != '|') {
      cell += line[i];
      continue;
    }
    const size_t b = cell.find_first_not_of(' ');
    const size_t e = cell.find_last_not_of(' ');
    out.push_back(b == std::string::npos ? "" : cell.substr(b, e - b + 1));
    cell.clear();
  }
  return out;
}

std::string Join(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "`" : ", `") + n + "`";
  return out;
}

// ---- gRPC services

struct ProtoService {
  std::string file;  // proto/NAME.proto
  std::vector<std::string> methods;
};

// Every service of idlepool.proto and of the files it imports, by name.
std::map<std::string, ProtoService> ProtoServices() {
  std::map<std::string, ProtoService> out;
  std::vector<const google::protobuf::FileDescriptor*> todo = {v1::Hello::descriptor()->file()};
  std::set<std::string> seen;
  while (!todo.empty()) {
    const auto* file = todo.back();
    todo.pop_back();
    if (!seen.insert(file->name()).second) continue;
    for (int i = 0; i < file->dependency_count(); ++i) todo.push_back(file->dependency(i));
    for (int s = 0; s < file->service_count(); ++s) {
      const auto* service = file->service(s);
      ProtoService& ps = out[service->name()];
      ps.file = "proto/" + fs::path(file->name()).filename().string();
      for (int m = 0; m < service->method_count(); ++m) {
        ps.methods.push_back(service->method(m)->name());
      }
    }
  }
  return out;
}

TEST(DesignDoc, ServicesTableNamesEveryRpcOfEveryService) {
  const std::string h = "## gRPC services";
  const auto proto = ProtoServices();
  ASSERT_GE(proto.size(), 7u) << "the proto's services were not found";
  std::map<std::string, std::vector<std::string>> doc;  // service -> RPCs, from its row
  for (const std::string& line : Section(h)) {
    const auto cells = Cells(line);
    if (cells.size() < 4) continue;
    const auto service = CapitalizedNames(cells.front());
    if (service.size() != 1) continue;  // the header and separator rows
    doc[service[0]] = CapitalizedNames(cells[cells.size() - 1]);
  }
  ASSERT_FALSE(doc.empty()) << Where(h) << ": no services table (| service | served by | "
                            << "called by | RPCs |) found";
  for (const auto& [name, ps] : proto) {
    auto it = doc.find(name);
    if (it == doc.end()) {
      ADD_FAILURE() << Where(h) << ": no row for service `" << name << "` (" << ps.file
                    << "); add: | `" << name << "` | served by | called by | " << Join(ps.methods)
                    << " |";
      continue;
    }
    const std::set<std::string> named(it->second.begin(), it->second.end());
    const std::set<std::string> real(ps.methods.begin(), ps.methods.end());
    for (const std::string& m : ps.methods) {
      EXPECT_TRUE(named.count(m)) << Where(h) << ": the row of `" << name << "` lacks RPC `" << m
                                  << "` (" << ps.file << "); add `" << m << "` to its RPCs column";
    }
    for (const std::string& m : it->second) {
      EXPECT_TRUE(real.count(m)) << Where(h) << ": the row of `" << name << "` names RPC `" << m
                                 << "`, which " << ps.file << " does not define; remove it";
    }
  }
  for (const auto& [name, rpcs] : doc) {
    EXPECT_TRUE(proto.count(name)) << Where(h) << ": a row for service `" << name
                                   << "`, which no proto/*.proto defines; remove the row";
  }
}

TEST(DesignDoc, JobsTableDescribesEveryJobsRpc) {
  const std::string h = "### Jobs (clients)";
  const ProtoService jobs = ProtoServices().at("Jobs");
  std::set<std::string> doc;
  for (const std::string& line : Section(h)) {
    const auto cells = Cells(line);
    if (cells.size() < 2) continue;
    for (const std::string& n : CapitalizedNames(cells.front())) doc.insert(n);
  }
  ASSERT_FALSE(doc.empty()) << Where(h) << ": no | RPC | returns | table found";
  for (const std::string& m : jobs.methods) {
    EXPECT_TRUE(doc.count(m)) << Where(h) << ": no row for RPC `" << m << "` of `Jobs` ("
                              << jobs.file << "); add: | `" << m << "` | what it returns |";
  }
  const std::set<std::string> real(jobs.methods.begin(), jobs.methods.end());
  for (const std::string& m : doc) {
    EXPECT_TRUE(real.count(m)) << Where(h) << ": a row for `" << m << "`, which is not an RPC of "
                               << "`Jobs` in " << jobs.file << "; remove it";
  }
}

// ---- the store

struct Db {
  sqlite3* db = nullptr;
  ~Db() { sqlite3_close(db); }
};

std::vector<std::string> Column(sqlite3* db, const char* sql) {
  std::vector<std::string> out;
  sqlite3_stmt* st = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql, -1, &st, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  while (sqlite3_step(st) == SQLITE_ROW) {
    out.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)));
  }
  sqlite3_finalize(st);
  return out;
}

constexpr char kTablesSql[] =
    "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%' ORDER BY name";

// The version whose migration step created each table (1: kSchemaV1), replaying the steps of
// src/store/sqlite_schema.h on an empty database.
std::map<std::string, int> TableSince() {
  Db d;
  EXPECT_EQ(sqlite3_open(":memory:", &d.db), SQLITE_OK);
  std::map<std::string, int> since;
  auto step = [&](int version, const char* ddl) {
    EXPECT_EQ(sqlite3_exec(d.db, ddl, nullptr, nullptr, nullptr), SQLITE_OK)
        << "version " << version << ": " << sqlite3_errmsg(d.db);
    for (const std::string& t : Column(d.db, kTablesSql)) since.emplace(t, version);
  };
  step(1, store::internal::kSchemaV1);
  for (const auto& m : store::internal::kMigrations) step(m.to, m.ddl);
  return since;
}

TEST(DesignDoc, StoreSchemaVersionAndTables) {
  const std::string h = "## The store";
  const fs::path dir =
      fs::temp_directory_path() / ("design_doc_test." + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string path = (dir / "pool.db").string();
  {
    auto opened = store::OpenSqliteStore(path);
    ASSERT_TRUE(opened.ok()) << opened.status();
  }
  Db d;
  ASSERT_EQ(sqlite3_open_v2(path.c_str(), &d.db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  const std::string version = Column(d.db, "PRAGMA user_version").at(0);
  const std::vector<std::string> tables = Column(d.db, kTablesSql);
  fs::remove_all(dir);
  ASSERT_GE(tables.size(), 10u);

  const std::vector<std::string> section = Section(h);
  std::string text;
  for (const std::string& line : section) text += line + "\n";
  std::smatch m;
  ASSERT_TRUE(std::regex_search(text, m, std::regex(R"(Schema version \*\*(\d+)\*\*)")))
      << Where(h) << ": no \"Schema version **N**\"; a fresh store has version " << version;
  EXPECT_EQ(m[1].str(), version) << Where(h) << ": says schema version " << m[1].str()
                                 << "; a fresh store has " << version
                                 << " (src/store/sqlite_schema.h kSchemaVersion): write \"Schema "
                                 << "version **" << version << "**\"";

  std::map<std::string, std::string> doc;  // table -> its "since" cell
  for (const std::string& line : section) {
    const auto cells = Cells(line);
    if (cells.size() < 4) continue;
    static const std::regex name("`([a-z_]+)`");
    std::smatch t;
    if (std::regex_match(cells.front(), t, name)) doc[t[1].str()] = cells.back();
  }
  const auto since = TableSince();
  for (const std::string& t : tables) {
    const std::string v = since.count(t) ? std::to_string(since.at(t)) : "?";
    auto it = doc.find(t);
    if (it == doc.end()) {
      ADD_FAILURE() << Where(h) << ": no row for table `" << t << "` (since version " << v
                    << ", src/store/sqlite_schema.h); add: | `" << t
                    << "` | key | what each row holds | " << v << " |";
      continue;
    }
    EXPECT_EQ(it->second, v) << Where(h) << ": table `" << t << "` is said to be there since "
                             << "version " << it->second << "; its migration step is version " << v
                             << " (src/store/sqlite_schema.h): write " << v;
  }
  const std::set<std::string> real(tables.begin(), tables.end());
  for (const auto& [t, v] : doc) {
    EXPECT_TRUE(real.count(t)) << Where(h) << ": a row for table `" << t << "`, which a fresh "
                               << "store does not have; remove the row";
  }
}

// ---- the core

// The alternatives of `using NAME = std::variant<...>;` in a header, in order.
std::vector<std::string> VariantNames(const std::string& header, const std::string& alias) {
  const std::string text = ReadFile(kRoot / header);
  std::smatch m;
  // Whatever the formatter makes of it: `=` may end a line.
  const std::regex decl("using " + alias + R"(\s*=\s*std::variant<([^>]*)>;)");
  if (!std::regex_search(text, m, decl)) return {};
  std::vector<std::string> out;
  static const std::regex name("[A-Za-z_][A-Za-z0-9_]*");
  const std::string list = m[1];
  for (std::sregex_iterator it(list.begin(), list.end(), name), end; it != end; ++it) {
    out.push_back(it->str());
  }
  return out;
}

// The names in backticks of the bullet "- **LABEL**..." of a section (to the next bullet).
std::vector<std::string> BulletNames(const std::string& heading, const std::string& label) {
  std::string text;
  bool in = false;
  for (const std::string& line : Section(heading)) {
    if (line.rfind("- **", 0) == 0) in = line.rfind("- **" + label + "**", 0) == 0;
    if (in) text += line + "\n";
  }
  return CapitalizedNames(text);
}

void ExpectSameNames(const std::string& heading, const std::string& label,
                     const std::vector<std::string>& doc, const std::vector<std::string>& code,
                     const std::string& where_in_code) {
  const std::set<std::string> d(doc.begin(), doc.end()), c(code.begin(), code.end());
  for (const std::string& n : code) {
    EXPECT_TRUE(d.count(n)) << Where(heading) << ": the \"" << label << "\" bullet lacks `" << n
                            << "` (" << where_in_code << "); add `" << n << "` to it";
  }
  for (const std::string& n : doc) {
    EXPECT_TRUE(c.count(n)) << Where(heading) << ": the \"" << label << "\" bullet names `" << n
                            << "`, which is not in " << where_in_code << "; remove it";
  }
}

TEST(DesignDoc, CoreEventsAndDecisions) {
  const std::string h = "## The scheduler core";
  const auto events = VariantNames("src/core/events.h", "Event");
  // The parse is checked against the compiler's count, so it cannot go quietly wrong.
  ASSERT_EQ(events.size(), std::variant_size_v<core::Event>)
      << "could not read `using Event = std::variant<...>;` in src/core/events.h";
  ExpectSameNames(h, "Events", BulletNames(h, "Events"), events, "core::Event, src/core/events.h");
  const auto decisions = VariantNames("src/core/scheduler.h", "Decision");
  ASSERT_EQ(decisions.size(), std::variant_size_v<core::Decision>)
      << "could not read `using Decision = std::variant<...>;` in src/core/scheduler.h";
  ExpectSameNames(h, "Decisions", BulletNames(h, "Decisions"), decisions,
                  "core::Decision, src/core/scheduler.h");
}

// ---- the folders

TEST(DesignDoc, LayersNameEveryFolderUnderSrc) {
  const std::string h = "## Layers";
  std::string block;
  bool in = false;
  for (const std::string& line : Section(h)) {
    if (line.rfind("```", 0) == 0) {
      in = !in;
      continue;
    }
    if (in) block += line + "\n";
  }
  ASSERT_FALSE(block.empty()) << Where(h) << ": no code block of folders found";
  std::set<std::string> doc;
  static const std::regex folder(R"(src/([A-Za-z0-9_-]+)/)");
  for (std::sregex_iterator it(block.begin(), block.end(), folder), end; it != end; ++it) {
    doc.insert((*it)[1].str());
  }
  std::set<std::string> real;
  for (const auto& e : fs::directory_iterator(kRoot / "src")) {
    if (e.is_directory()) real.insert(e.path().filename().string());
  }
  ASSERT_GE(real.size(), 10u);
  for (const std::string& f : real) {
    EXPECT_TRUE(doc.count(f)) << Where(h) << ": no line for src/" << f << "/ (a folder under "
                              << "src/); add a line to its code block: src/" << f
                              << "/  what it holds";
  }
  for (const std::string& f : doc) {
    EXPECT_TRUE(real.count(f)) << Where(h) << ": names src/" << f << "/, which does not exist; "
                               << "remove it";
  }
}

}  // namespace
}  // namespace idlepool
