// The depth of a parsed TOML tree, for the targets that read TOML: spec::toml_util::Prescan
// promises an upper bound of it.
#pragma once

#include <toml++/toml.h>

#include <algorithm>
#include <utility>
#include <vector>

namespace idlepool::fuzz {

// The depth of the deepest node of a parsed TOML tree (the root's children are at depth 1),
// walked with an explicit stack so a deep tree cannot overflow this walk.
inline int TomlDepth(const toml::node& root) {
  int deepest = 0;
  std::vector<std::pair<const toml::node*, int>> todo{{&root, 0}};
  while (!todo.empty()) {
    auto [n, depth] = todo.back();
    todo.pop_back();
    deepest = std::max(deepest, depth);
    if (const toml::table* t = n->as_table()) {
      for (auto&& [k, v] : *t) todo.push_back({&v, depth + 1});
    } else if (const toml::array* a = n->as_array()) {
      for (const toml::node& v : *a) todo.push_back({&v, depth + 1});
    }
  }
  return deepest;
}

}  // namespace idlepool::fuzz
