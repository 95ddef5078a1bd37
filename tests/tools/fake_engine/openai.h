// The OpenAI wire format of idlepool-fake-engine: what a request asks for, and the bodies, stream
// events and errors it is answered with. Pure functions over strings (no I/O, no clock, no
// state); safe from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fake_engine {

enum class Api { kChat, kCompletions, kEmbeddings };

// What a valid request asks for.
struct Ask {
  Api api = Api::kChat;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage: a usage event before [DONE]
  int tokens = 0;              // tokens to generate: the engine's --tokens, or max_tokens if less
  bool cut_by_max_tokens = false;   // finish_reason "length" instead of "stop"
  int prompt_tokens = 0;            // words in the prompt, messages or inputs
  std::vector<std::string> inputs;  // embeddings: one text per input
  bool base64 = false;              // embeddings: encoding_format "base64" (float32, little-endian)
};

// A request refused: the HTTP status and its OpenAI error body.
struct Refusal {
  int status = 400;
  std::string body;
};

// Parses and checks a request body for `api`; tokens_max is the engine's --tokens. A refusal
// names the field at fault (400), e.g. a missing "messages" or a non-boolean "stream".
struct Parsed {
  std::optional<Ask> ask;
  Refusal refusal;
};
Parsed ParseAsk(Api api, std::string_view body, int tokens_max);

// Who answers: the served model's name, the replica's --id, and this response's id.
struct Who {
  std::string_view model;
  std::string_view replica;
  std::string response_id;
};

// The text of token k (0-based): token 0 says which replica answers ("replica=ID"), the others
// are " tokK". The whole content is the tokens concatenated.
std::string TokenText(std::string_view replica, int k);

// One server-sent event for token k: "data: {chunk}\n\n", the chunk shaped as OpenAI's
// (chat: choices[0].delta.content, the first with role "assistant"; completions:
// choices[0].text).
std::string TokenEvent(const Who& who, const Ask& ask, int k);
// The events that end a stream: the chunk with finish_reason, the usage chunk when asked, and
// "data: [DONE]\n\n".
std::string EndEvents(const Who& who, const Ask& ask);
// The whole answer of a non-streamed request, with usage counts.
std::string FullBody(const Who& who, const Ask& ask, int embedding_dim);

// {"error": {"message", "type", "param", "code"}} as OpenAI sends it.
std::string ErrorBody(std::string_view message, std::string_view type, std::string_view param,
                      int code);
std::string ModelsBody(std::string_view model);
std::string HealthBody(bool loading);

// A deterministic unit vector of `dim` floats for a text (the same text, the same vector).
std::vector<double> EmbeddingOf(std::string_view text, int dim);

// A number in [0, 1) from (seed, n), the same on every run: --error-rate's draw for request n.
double Draw(uint64_t seed, uint64_t n);

}  // namespace fake_engine
