// The gateway's one-pass JSON check (internal to gateway*.cc): every OpenAI request body is
// checked as JSON and its top-level `model` read, on the io thread, per request. nlohmann's
// parser (even its SAX interface) costs several thousand instructions for a small chat body; this
// scanner does the same check in one pass over the bytes, without allocating for a body nested
// fewer than 16 levels and a model name of up to 15 bytes.
//
// What counts as JSON is what nlohmann::json::parse accepts (RFC 8259, strict): one value with
// optional whitespace around it, an optional UTF-8 byte order mark first, strings of well-formed
// UTF-8 (no overlong forms or surrogates) whose escapes are valid (\uD800-\uDBFF followed by a
// low surrogate, no lone low surrogate), no control character unescaped in a string, numbers of
// the JSON grammar whose value is finite as a double; a NUL byte after the value ends the input
// (nlohmann's end-of-input, what follows it is not read). Duplicate keys are allowed; the last
// `model` counts, as in a parsed document. gateway_parse_test compares both on seeded variations.
//
// Pure: no state; safe from any thread.
#pragma once

#include <string>
#include <string_view>

namespace idlepool::serve {

struct TopLevelModel {
  enum class Kind {
    kMalformed,  // not JSON
    kNotObject,  // JSON, but not an object
    kAbsent,     // an object without a top-level "model"
    kNotString,  // its last top-level "model" is not a string
    kString,     // ... is a string: `model`, escapes decoded
  };
  Kind kind = Kind::kMalformed;
  std::string model;
};

TopLevelModel ScanTopLevelModel(std::string_view body);

}  // namespace idlepool::serve
