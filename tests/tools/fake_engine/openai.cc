#include "fake_engine/openai.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "nlohmann/json.hpp"

namespace fake_engine {
namespace {

using nlohmann::json;

// Every response says it was created at this fixed time: the tool reads no clock.
constexpr int64_t kCreated = 1700000000;

int Words(std::string_view text) {
  int words = 0;
  bool in_word = false;
  for (char c : text) {
    bool space = c == ' ' || c == '\n' || c == '\t' || c == '\r';
    if (!space && !in_word) ++words;
    in_word = !space;
  }
  return words;
}

Parsed Refuse(std::string message, std::string_view param) {
  return {std::nullopt, {400, ErrorBody(message, "invalid_request_error", param, 400)}};
}

// A prompt or an embeddings input: a string, an array of strings, of token ids, or of arrays of
// token ids. Appends one text per input (token ids joined by spaces); false when malformed.
bool Texts(const json& v, std::vector<std::string>* out) {
  auto ids = [](const json& a, std::string* text) {
    for (const auto& t : a) {
      if (!t.is_number_integer()) return false;
      if (!text->empty()) *text += ' ';
      *text += std::to_string(t.get<int64_t>());
    }
    return true;
  };
  if (v.is_string()) {
    out->push_back(v.get<std::string>());
    return true;
  }
  if (!v.is_array() || v.empty()) return false;
  if (v[0].is_number_integer()) {
    std::string text;
    if (!ids(v, &text)) return false;
    out->push_back(text);
    return true;
  }
  for (const auto& e : v) {
    std::string text;
    if (e.is_string()) {
      text = e.get<std::string>();
    } else if (!e.is_array() || !ids(e, &text)) {
      return false;
    }
    out->push_back(std::move(text));
  }
  return true;
}

// The chat messages' words; an error message naming the field, or "".
std::string CountMessages(const json& messages, int* words) {
  if (!messages.is_array() || messages.empty()) {
    return "'messages' must be a non-empty array";
  }
  for (size_t i = 0; i < messages.size(); ++i) {
    const json& m = messages[i];
    std::string at = "messages[" + std::to_string(i) + "]";
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string()) {
      return at + " must be an object with a string 'role'";
    }
    auto content = m.find("content");
    if (content == m.end() || content->is_null()) continue;
    if (content->is_string()) {
      *words += Words(content->get_ref<const std::string&>());
    } else if (content->is_array()) {
      for (const auto& part : *content) {
        if (part.is_object() && part.contains("text") && part["text"].is_string()) {
          *words += Words(part["text"].get_ref<const std::string&>());
        }
      }
    } else {
      return at + ".content must be a string or an array of parts";
    }
  }
  return "";
}

// max_tokens (or max_completion_tokens), stream and stream_options into `ask`; "" or an error
// about the field named in *param.
std::string ReadCommon(const json& req, int tokens_max, Ask* ask, std::string* param) {
  int64_t tokens = tokens_max;
  for (const char* key : {"max_tokens", "max_completion_tokens"}) {
    auto it = req.find(key);
    if (it == req.end() || it->is_null()) continue;
    *param = key;
    if (!it->is_number_integer() || it->get<int64_t>() < 1) {
      return std::string("'") + key + "' must be an integer of at least 1";
    }
    tokens = std::min(tokens, it->get<int64_t>());
  }
  ask->tokens = static_cast<int>(tokens);
  ask->cut_by_max_tokens = tokens < tokens_max;
  auto stream = req.find("stream");
  if (stream != req.end() && !stream->is_null()) {
    *param = "stream";
    if (!stream->is_boolean()) return "'stream' must be a boolean";
    ask->stream = stream->get<bool>();
  }
  auto options = req.find("stream_options");
  if (options != req.end() && options->is_object()) {
    auto usage = options->find("include_usage");
    ask->include_usage = usage != options->end() && usage->is_boolean() && usage->get<bool>();
  }
  return "";
}

}  // namespace

Parsed ParseAsk(Api api, std::string_view body, int tokens_max) {
  json req = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (req.is_discarded()) return Refuse("the request body is not valid JSON", "");
  if (!req.is_object()) return Refuse("the request body must be a JSON object", "");
  if (!req.contains("model") || !req["model"].is_string()) {
    return Refuse("'model' is required (a string)", "model");
  }
  Ask ask;
  ask.api = api;
  std::string why;
  std::string param;
  if (api == Api::kChat) {
    param = "messages";
    why = req.contains("messages") ? CountMessages(req["messages"], &ask.prompt_tokens)
                                   : "'messages' is required";
  } else {
    param = api == Api::kCompletions ? "prompt" : "input";
    std::vector<std::string> texts;
    if (!req.contains(param) || !Texts(req[param], &texts)) {
      why = "'" + param + "' is required: a string, an array of strings or tokens";
    }
    for (const auto& t : texts) ask.prompt_tokens += Words(t);
    if (api == Api::kEmbeddings) ask.inputs = std::move(texts);
  }
  if (why.empty() && api == Api::kEmbeddings && req.contains("encoding_format")) {
    const json& format = req["encoding_format"];
    ask.base64 = format == "base64";
    if (!ask.base64 && format != "float") {
      param = "encoding_format";
      why = "'encoding_format' must be \"float\" or \"base64\"";
    }
  }
  if (why.empty() && api != Api::kEmbeddings) {
    why = ReadCommon(req, tokens_max, &ask, &param);
  }
  if (!why.empty()) return Refuse(why, param);
  return {ask, {}};
}

std::string TokenText(std::string_view replica, int k) {
  if (k == 0) return "replica=" + std::string(replica);
  return " tok" + std::to_string(k);
}

namespace {

json ChunkHead(const Who& who, const Ask& ask) {
  return {{"id", who.response_id},
          {"object", ask.api == Api::kChat ? "chat.completion.chunk" : "text_completion"},
          {"created", kCreated},
          {"model", who.model},
          {"system_fingerprint", "fake-engine"}};
}

json Choice(const Ask& ask, const std::string& text, const json& finish, bool first) {
  json choice = {{"index", 0}, {"logprobs", nullptr}, {"finish_reason", finish}};
  if (ask.api == Api::kCompletions) {
    choice["text"] = text;
  } else if (finish.is_null()) {
    choice["delta"] =
        first ? json{{"role", "assistant"}, {"content", text}} : json{{"content", text}};
  } else {
    choice["delta"] = json::object();
  }
  return choice;
}

json Usage(const Ask& ask) {
  int completion = ask.api == Api::kEmbeddings ? 0 : ask.tokens;
  return {{"prompt_tokens", ask.prompt_tokens},
          {"completion_tokens", completion},
          {"total_tokens", ask.prompt_tokens + completion}};
}

std::string Event(const json& chunk) { return "data: " + chunk.dump() + "\n\n"; }

std::string Content(const Who& who, const Ask& ask) {
  std::string text;
  for (int k = 0; k < ask.tokens; ++k) text += TokenText(who.replica, k);
  return text;
}

std::string FinishReason(const Ask& ask) { return ask.cut_by_max_tokens ? "length" : "stop"; }

// The vector as OpenAI's base64 encoding_format: float32 little-endian bytes in base64.
std::string Base64Floats(const std::vector<double>& v) {
  static constexpr char kDigits[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string bytes;
  for (double x : v) {
    float f = static_cast<float>(x);
    uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    for (int i = 0; i < 4; ++i) bytes.push_back(static_cast<char>((u >> (8 * i)) & 0xff));
  }
  std::string out;
  for (size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t n = static_cast<unsigned char>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) n |= static_cast<unsigned char>(bytes[i + 1]) << 8;
    if (i + 2 < bytes.size()) n |= static_cast<unsigned char>(bytes[i + 2]);
    out += kDigits[(n >> 18) & 63];
    out += kDigits[(n >> 12) & 63];
    out += i + 1 < bytes.size() ? kDigits[(n >> 6) & 63] : '=';
    out += i + 2 < bytes.size() ? kDigits[n & 63] : '=';
  }
  return out;
}

std::string EmbeddingsBody(const Who& who, const Ask& ask, int dim) {
  json data = json::array();
  for (size_t i = 0; i < ask.inputs.size(); ++i) {
    std::vector<double> v = EmbeddingOf(ask.inputs[i], dim);
    json embedding = ask.base64 ? json(Base64Floats(v)) : json(v);
    data.push_back({{"object", "embedding"}, {"index", i}, {"embedding", embedding}});
  }
  json usage = {{"prompt_tokens", ask.prompt_tokens}, {"total_tokens", ask.prompt_tokens}};
  return json{{"object", "list"}, {"data", data}, {"model", who.model}, {"usage", usage}}.dump();
}

}  // namespace

std::string TokenEvent(const Who& who, const Ask& ask, int k) {
  json chunk = ChunkHead(who, ask);
  chunk["choices"] = json::array({Choice(ask, TokenText(who.replica, k), nullptr, k == 0)});
  return Event(chunk);
}

std::string EndEvents(const Who& who, const Ask& ask) {
  json last = ChunkHead(who, ask);
  last["choices"] = json::array({Choice(ask, "", FinishReason(ask), false)});
  std::string out = Event(last);
  if (ask.include_usage) {
    json usage = ChunkHead(who, ask);
    usage["choices"] = json::array();
    usage["usage"] = Usage(ask);
    out += Event(usage);
  }
  return out + "data: [DONE]\n\n";
}

std::string FullBody(const Who& who, const Ask& ask, int embedding_dim) {
  if (ask.api == Api::kEmbeddings) return EmbeddingsBody(who, ask, embedding_dim);
  json choice = {{"index", 0}, {"logprobs", nullptr}, {"finish_reason", FinishReason(ask)}};
  if (ask.api == Api::kChat) {
    choice["message"] = {{"role", "assistant"}, {"content", Content(who, ask)}};
  } else {
    choice["text"] = Content(who, ask);
  }
  return json{{"id", who.response_id},
              {"object", ask.api == Api::kChat ? "chat.completion" : "text_completion"},
              {"created", kCreated},
              {"model", who.model},
              {"system_fingerprint", "fake-engine"},
              {"choices", json::array({choice})},
              {"usage", Usage(ask)}}
      .dump();
}

std::string ErrorBody(std::string_view message, std::string_view type, std::string_view param,
                      int code) {
  json error = {{"message", message}, {"type", type}, {"code", code}};
  error["param"] = param.empty() ? json(nullptr) : json(param);
  return json{{"error", error}}.dump();
}

std::string ModelsBody(std::string_view model) {
  json m = {{"id", model}, {"object", "model"}, {"created", kCreated}, {"owned_by", "fake-engine"}};
  return json{{"object", "list"}, {"data", json::array({m})}}.dump();
}

std::string HealthBody(bool loading) {
  if (loading) return ErrorBody("Loading model", "unavailable_error", "", 503);
  return json{{"status", "ok"}}.dump();
}

std::vector<double> EmbeddingOf(std::string_view text, int dim) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a over the text, then one step per dimension
  for (char c : text) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  std::vector<double> v(static_cast<size_t>(dim));
  double norm = 0;
  for (auto& x : v) {
    x = Draw(h, static_cast<uint64_t>(&x - v.data())) * 2 - 1;
    norm += x * x;
  }
  for (auto& x : v) x = norm > 0 ? x / std::sqrt(norm) : 0;
  return v;
}

double Draw(uint64_t seed, uint64_t n) {
  uint64_t z = seed + (n + 1) * 0x9E3779B97F4A7C15ull;  // splitmix64
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) / static_cast<double>(1ull << 53);
}

}  // namespace fake_engine
