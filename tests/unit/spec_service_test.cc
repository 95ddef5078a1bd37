// A job file's [service] table (issue 17; spec/service.h, spec/service_table.cc,
// spec/service_check.cc): every key with its default, both replica forms, each refusal with its
// place (file:line:col) or, through Validate, its field; what a service may not have of a batch
// job; {port} and {replica} in commands; TaskCount and ExpandTasks of a service.
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "spec/service.h"
#include "spec/spec.h"

namespace idlepool::spec {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// Line 1 and 2; [service] is line 3, its first key line 4.
const std::string kHead = "command = [\"server\", \"--port={port}\"]\nname = \"svc\"\n";

absl::StatusOr<JobSpec> Parse(std::string_view toml) {
  return ParseJobToml(toml, "job.toml", "/tmp");
}

std::string Service(const std::string& keys) { return absl::StrCat(kHead, "[service]\n", keys); }

std::string Error(std::string_view toml) {
  absl::StatusOr<JobSpec> spec = Parse(toml);
  EXPECT_FALSE(spec.ok()) << toml;
  if (spec.ok()) return "";
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument) << spec.status();
  return std::string(spec.status().message());
}

// A valid service spec as it would come over the wire.
JobSpec WireService() {
  JobSpec s;
  s.name = "svc";
  s.command = {"server", "--port", "{port}", "--slot={replica}"};
  s.service = ServiceSpec{};
  return s;
}

std::string Invalid(const JobSpec& s) {
  absl::Status st = Validate(s);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
  return std::string(st.message());
}

TEST(ServiceSpec, AnEmptyTableIsOneHttpReplicaWithTheDefaults) {
  absl::StatusOr<JobSpec> spec = Parse(Service(""));
  ASSERT_TRUE(spec.ok()) << spec.status();
  ASSERT_TRUE(spec->service.has_value());
  const ServiceSpec& s = *spec->service;
  EXPECT_EQ(s.min_replicas, 1u);
  EXPECT_EQ(s.max_replicas, 1u);
  EXPECT_TRUE(s.Fixed());
  EXPECT_EQ(s.protocol, "http");
  EXPECT_FALSE(s.OpenAi());
  EXPECT_EQ(s.model, "");
  EXPECT_EQ(s.health, "/health");
  EXPECT_EQ(s.max_concurrent, 4u);
  EXPECT_EQ(s.drain_seconds, 30u);
  EXPECT_EQ(s.replicas_per_machine, 1u);
  EXPECT_EQ(s, ServiceSpec{});
  // Its tasks are its replicas: a count job of no count.
  EXPECT_EQ(spec->kind, TaskKind::kCount);
  EXPECT_EQ(spec->count, 0u);
  EXPECT_TRUE(Validate(*spec).ok());
  // Without the table a job is no service.
  spec = Parse("command = [\"true\"]\ncount = 2\n");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_FALSE(spec->service.has_value());
}

TEST(ServiceSpec, EveryKeyIsRead) {
  absl::StatusOr<JobSpec> spec = Parse(absl::StrCat(
      "command = [\"llama-server\", \"--port\", \"{port}\", \"-m\", \"{task_dir}/m.gguf\"]\n"
      "inputs = []\n"
      "[resources]\ngpus = 1\n"
      "[service]\n",
      "min_replicas = 0\nmax_replicas = 8\nprotocol = \"openai\"\n",
      "model = \"org/Model-7B.Q4:latest_v2\"\nhealth = \"/v1/models?ready=1\"\n",
      "max_concurrent = 4096\ndrain_seconds = 3600\nreplicas_per_machine = 64\n"));
  ASSERT_TRUE(spec.ok()) << spec.status();
  const ServiceSpec& s = *spec->service;
  EXPECT_EQ(s.min_replicas, 0u);
  EXPECT_EQ(s.max_replicas, 8u);
  EXPECT_FALSE(s.Fixed());
  EXPECT_TRUE(s.OpenAi());
  EXPECT_EQ(s.model, "org/Model-7B.Q4:latest_v2");
  EXPECT_EQ(s.health, "/v1/models?ready=1");
  EXPECT_EQ(s.max_concurrent, 4096u);
  EXPECT_EQ(s.drain_seconds, 3600u);
  EXPECT_EQ(s.replicas_per_machine, 64u);
  EXPECT_EQ(spec->resources.gpus, 1u);
  EXPECT_TRUE(Validate(*spec).ok());
  // The low ends, and a dotted key.
  spec = Parse(Service("drain_seconds = 0\nmax_concurrent = 1\nreplicas = 1024\n"));
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->service->drain_seconds, 0u);
  EXPECT_EQ(spec->service->max_concurrent, 1u);
  spec = Parse(absl::StrCat(kHead, "service.replicas = 3\n"));
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->service->max_replicas, 3u);
}

TEST(ServiceSpec, AFixedCountOrARangeToAutoscaleIn) {
  absl::StatusOr<JobSpec> fixed = Parse(Service("replicas = 4\n"));
  ASSERT_TRUE(fixed.ok()) << fixed.status();
  EXPECT_EQ(fixed->service->min_replicas, 4u);
  EXPECT_EQ(fixed->service->max_replicas, 4u);
  EXPECT_TRUE(fixed->service->Fixed());
  absl::StatusOr<JobSpec> range = Parse(Service("min_replicas = 2\nmax_replicas = 5\n"));
  ASSERT_TRUE(range.ok()) << range.status();
  EXPECT_EQ(range->service->min_replicas, 2u);
  EXPECT_EQ(range->service->max_replicas, 5u);
  // max alone: from one replica up.
  range = Parse(Service("max_replicas = 3\n"));
  ASSERT_TRUE(range.ok()) << range.status();
  EXPECT_EQ(range->service->min_replicas, 1u);
  EXPECT_EQ(range->service->max_replicas, 3u);
  range = Parse(Service("min_replicas = 3\nmax_replicas = 3\n"));  // a range of one
  ASSERT_TRUE(range.ok()) << range.status();
  EXPECT_TRUE(range->service->Fixed());
}

TEST(ServiceSpec, ReplicaRefusalsNameTheirPlace) {
  EXPECT_EQ(Error(Service("replicas = 2\nmax_replicas = 3\n")),
            "job.toml:5:16: key 'service.max_replicas': give either replicas = N (a fixed count) "
            "or min_replicas and max_replicas (autoscaled between them), not both; replicas is "
            "given at line 4");
  EXPECT_THAT(Error(Service("min_replicas = 1\nreplicas = 2\n")),
              StartsWith("job.toml:4:16: key 'service.min_replicas': give either replicas"));
  EXPECT_EQ(Error(Service("min_replicas = 2\n")),
            "job.toml:4:16: key 'service.min_replicas': needs max_replicas (the most replicas "
            "autoscaling may run)");
  EXPECT_EQ(Error(Service("min_replicas = 5\nmax_replicas = 2\n")),
            "job.toml:4:16: key 'service.min_replicas': is 5, more than max_replicas = 2");
  EXPECT_EQ(Error(Service("replicas = 0\n")),
            "job.toml:4:12: key 'service.replicas': must be an integer from 1 to 1024, got 0");
  EXPECT_EQ(Error(Service("replicas = 1025\n")),
            "job.toml:4:12: key 'service.replicas': must be an integer from 1 to 1024, got 1025");
  EXPECT_THAT(Error(Service("max_replicas = 0\n")),
              HasSubstr("key 'service.max_replicas': must be an integer from 1 to 1024, got 0"));
  EXPECT_THAT(Error(Service("min_replicas = -1\nmax_replicas = 2\n")),
              HasSubstr("key 'service.min_replicas': must be an integer from 0 to 1024, got -1"));
  EXPECT_THAT(Error(Service("replicas = \"2\"\n")),
              HasSubstr("from 1 to 1024, got the string \"2\""));
  EXPECT_THAT(Error(Service("replicas = 2.5\n")), HasSubstr("got the float 2.5"));
}

TEST(ServiceSpec, ProtocolAndModelRefusals) {
  EXPECT_EQ(Error(Service("protocol = \"grpc\"\n")),
            "job.toml:4:12: key 'service.protocol': must be \"openai\" or \"http\", got \"grpc\"");
  EXPECT_THAT(Error(Service("protocol = \"OpenAI\"\nmodel = \"m\"\n")),
              HasSubstr("must be \"openai\" or \"http\", got \"OpenAI\""));
  EXPECT_EQ(Error(Service("protocol = 1\n")),
            "job.toml:4:12: key 'service.protocol': must be a string, got 1");
  EXPECT_EQ(Error(Service("protocol = \"openai\"\n")),
            "job.toml:4:12: key 'service.protocol': \"openai\" needs model = \"...\" under "
            "[service]: the name OpenAI clients send, e.g. \"org/model:tag\"");
  EXPECT_EQ(Error(Service("model = \"llama\"\n")),
            "job.toml:4:9: key 'service.model': is only for protocol = \"openai\" (clients of an "
            "\"http\" service name it by its path, /services/NAME/...)");
  EXPECT_THAT(Error(Service("protocol = \"http\"\nmodel = \"llama\"\n")),
              StartsWith("job.toml:5:9: key 'service.model': is only for protocol"));
  const std::string openai = "protocol = \"openai\"\n";
  EXPECT_EQ(Error(Service(openai + "model = \"my model\"\n")),
            "job.toml:5:9: key 'service.model': 'my model' is not a valid model name: use 1 to "
            "256 of A-Z a-z 0-9 . _ - / :");
  EXPECT_THAT(Error(Service(openai + "model = \"\"\n")),
              HasSubstr("key 'service.model': protocol = \"openai\" needs a model"));
  EXPECT_THAT(Error(Service(openai + "model = \"a@b\"\n")), HasSubstr("not a valid model name"));
  EXPECT_THAT(Error(Service(openai + "model = \"" + std::string(257, 'm') + "\"\n")),
              HasSubstr("not a valid model name"));
  EXPECT_TRUE(Parse(Service(openai + "model = \"" + std::string(256, 'm') + "\"\n")).ok());
  EXPECT_THAT(Error(Service(openai + "model = [\"m\"]\n")),
              HasSubstr("key 'service.model': must be a string, got an array"));
}

TEST(ServiceSpec, HealthRefusals) {
  EXPECT_EQ(Error(Service("health = \"health\"\n")),
            "job.toml:4:10: key 'service.health': 'health' must be a request path starting with "
            "'/', e.g. \"/health\"");
  EXPECT_THAT(Error(Service("health = \"\"\n")), HasSubstr("starting with '/'"));
  EXPECT_THAT(Error(Service("health = \"http://x/health\"\n")), HasSubstr("starting with '/'"));
  for (const char* bad : {"/he alth", "/a\\tb", "/a\\u007fb", "/caf\u00e9", "/h#frag"}) {
    EXPECT_THAT(Error(Service(absl::StrCat("health = \"", bad, "\"\n"))),
                AllOf(StartsWith("job.toml:4:10: key 'service.health': "),
                      HasSubstr("must be printable ASCII without spaces or '#'")))
        << bad;
  }
  EXPECT_EQ(Error(Service(absl::StrCat("health = \"/", std::string(1024, 'h'), "\"\n"))),
            "job.toml:4:10: key 'service.health': is 1025 bytes, over the limit of 1024");
  EXPECT_TRUE(Parse(Service(absl::StrCat("health = \"/", std::string(1023, 'h'), "\"\n"))).ok());
}

TEST(ServiceSpec, RangeRefusals) {
  EXPECT_EQ(
      Error(Service("max_concurrent = 0\n")),
      "job.toml:4:18: key 'service.max_concurrent': must be an integer from 1 to 4096, got 0");
  EXPECT_THAT(Error(Service("max_concurrent = 4097\n")), HasSubstr("from 1 to 4096, got 4097"));
  EXPECT_EQ(Error(Service("drain_seconds = 3601\n")),
            "job.toml:4:17: key 'service.drain_seconds': must be an integer from 0 to 3600, got "
            "3601");
  EXPECT_THAT(Error(Service("drain_seconds = -1\n")), HasSubstr("from 0 to 3600, got -1"));
  EXPECT_EQ(Error(Service("replicas_per_machine = 0\n")),
            "job.toml:4:24: key 'service.replicas_per_machine': must be an integer from 1 to 64, "
            "got 0");
  EXPECT_THAT(Error(Service("replicas_per_machine = 65\n")), HasSubstr("from 1 to 64, got 65"));
  EXPECT_THAT(Error(Service("max_concurrent = 99999999999999\n")), HasSubstr("got 99999999999999"));
}

TEST(ServiceSpec, UnknownMisplacedAndMistypedKeysAreNamed) {
  EXPECT_THAT(Error(Service("replica = 2\n")),
              AllOf(StartsWith("job.toml:4:1: unknown key 'service.replica'"),
                    HasSubstr("did you mean 'replicas'?"), HasSubstr("allowed here: replicas")));
  EXPECT_THAT(Error(Service("port = 8080\n")),
              AllOf(StartsWith("job.toml:4:1: unknown key 'service.port'"),
                    HasSubstr("allowed here: replicas, min_replicas, max_replicas, protocol, "
                              "model, health, max_concurrent, drain_seconds, "
                              "replicas_per_machine")));
  // A top-level key written after the header belongs to [service] in TOML: say so.
  EXPECT_THAT(Error(Service("inputs = [\"m.gguf\"]\n")),
              HasSubstr("keys after the [service] header belong to that table"));
  // [service]'s keys at the top level are told where they belong.
  EXPECT_THAT(Error(absl::StrCat(kHead, "max_concurrent = 4\n")),
              AllOf(StartsWith("job.toml:3:1: unknown key 'max_concurrent'"),
                    HasSubstr("(it belongs under [service])")));
  EXPECT_THAT(Error(absl::StrCat(kHead, "drain_seconds = 4\n")),
              HasSubstr("(it belongs under [service])"));
  EXPECT_EQ(Error(absl::StrCat(kHead, "service = true\n")),
            "job.toml:3:11: key 'service': must be a table ([service]), got true");
}

TEST(ServiceSpec, WhatABatchJobHasIsRefusedInAService) {
  const std::string tail = "[service]\nreplicas = 2\n";
  auto with = [&](const std::string& line) { return absl::StrCat(kHead, line, tail); };
  EXPECT_EQ(Error(with("count = 3\n")),
            "job.toml:3:1: key 'count': a service has no 'count': its tasks are its replicas "
            "(set [service] replicas, or min_replicas and max_replicas)");
  EXPECT_THAT(Error(with("frames = \"1-10\"\n")),
              StartsWith("job.toml:3:1: key 'frames': a service has no 'frames': its tasks"));
  EXPECT_THAT(Error(with("items = [\"a\"]\n")), StartsWith("job.toml:3:1: key 'items': a service"));
  EXPECT_THAT(Error(with("items_file = \"x.txt\"\n")),
              StartsWith("job.toml:3:1: key 'items_file': a service has no 'items_file'"));
  EXPECT_THAT(Error(with("chunk = 2\n")), StartsWith("job.toml:3:1: key 'chunk': a service"));
  EXPECT_EQ(Error(with("outputs = [\"out/*\"]\n")),
            "job.toml:3:1: key 'outputs': a service has no outputs: it produces responses, not "
            "files");
  EXPECT_THAT(Error(with("allow_empty_outputs = true\n")),
              StartsWith("job.toml:3:1: key 'allow_empty_outputs': a service has no outputs"));
  EXPECT_EQ(Error(absl::StrCat(kHead, tail, "[retry]\ntimeout_s = 60\n")),
            "job.toml:6:1: key 'retry.timeout_s': a service has no [retry]: its replicas run "
            "until it is stopped (no timeout_s), and one that exits is restarted with backoff "
            "for as long as it runs (no max_attempts)");
  EXPECT_THAT(Error(absl::StrCat(kHead, tail, "[retry]\nmax_attempts = 5\n")),
              StartsWith("job.toml:6:1: key 'retry.max_attempts': a service has no [retry]"));
  // The first in file order is named; an empty [retry] asks for nothing.
  EXPECT_THAT(Error(absl::StrCat(kHead, "outputs = [\"a\"]\ncount = 3\n", tail)),
              StartsWith("job.toml:3:1: key 'outputs'"));
  EXPECT_TRUE(Parse(absl::StrCat(kHead, tail, "[retry]\n")).ok());
  // Inputs, resources and [sandbox] are a service's as a batch job's.
  absl::StatusOr<JobSpec> spec = Parse(absl::StrCat(
      kHead, "inputs = []\n[resources]\ncpus = 4\n[sandbox]\nnetwork = \"host\"\n", tail));
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->resources.cpus, 4u);
  EXPECT_TRUE(spec->resources.host_network);
  // A batch job without a way to split it is told a service is the other way.
  EXPECT_THAT(Error(kHead), HasSubstr("or a [service] table"));
}

TEST(ServiceSpec, PortAndReplicaPlaceholdersAreAServicesOnly) {
  EXPECT_EQ(Error("command = [\"server\", \"--port={port}\"]\ncount = 2\n"),
            "job.toml:1:22: key 'command': element [1] '--port={port}': {port} is only for "
            "services (a job with a [service] table)");
  EXPECT_EQ(Error("command = [\"server\", \"{replica}\"]\ncount = 2\n"),
            "job.toml:1:22: key 'command': element [1] '{replica}': {replica} is only for "
            "services (a job with a [service] table)");
  // In a service: {port}, {replica}, {index} and {task_dir}, but no checkpoints.
  EXPECT_TRUE(
      Parse(
          "command = [\"s\", \"{port}\", \"{replica}\", \"{index}\", \"{task_dir}\"]\n[service]\n")
          .ok());
  EXPECT_EQ(Error("command = [\"s\", \"{checkpoint_dir}\"]\n[service]\n"),
            "job.toml:1:17: key 'command': element [1] '{checkpoint_dir}': a service's replicas "
            "keep no checkpoints");
  EXPECT_THAT(Error("command = [\"s\", \"{item}\"]\n[service]\n"),
              HasSubstr("{item} is only for 'items' or 'items_file' jobs"));
  EXPECT_THAT(Error("command = [\"s\", \"{frame}\"]\n[service]\n"),
              HasSubstr("{frame} is only for 'frames' jobs"));
  // Through Validate, the same.
  JobSpec batch = WireService();
  batch.service.reset();
  batch.count = 1;
  EXPECT_EQ(Invalid(batch),
            "job spec: field 'command': element [2] '{port}': {port} is only for services (a job "
            "with a [service] table)");
}

TEST(ServiceSpec, ValidateNamesEveryField) {
  EXPECT_TRUE(Validate(WireService()).ok());
  auto bad = [](auto edit) {
    JobSpec s = WireService();
    edit(s);
    return Invalid(s);
  };
  EXPECT_EQ(bad([](JobSpec& s) { s.service->max_replicas = 0; }),
            "job spec: field 'service.max_replicas': must be 1 to 1024, got 0");
  EXPECT_EQ(bad([](JobSpec& s) { s.service->max_replicas = 1025; }),
            "job spec: field 'service.max_replicas': must be 1 to 1024, got 1025");
  EXPECT_EQ(bad([](JobSpec& s) { s.service->min_replicas = 2; }),
            "job spec: field 'service.min_replicas': is 2, more than max_replicas = 1");
  EXPECT_EQ(bad([](JobSpec& s) { s.service->protocol = ""; }),
            "job spec: field 'service.protocol': must be \"openai\" or \"http\", got \"\"");
  EXPECT_EQ(bad([](JobSpec& s) { s.service->protocol = "openai"; }),
            "job spec: field 'service.model': protocol = \"openai\" needs a model: the name "
            "OpenAI clients send, e.g. model = \"org/model:tag\"");
  EXPECT_THAT(bad([](JobSpec& s) { s.service->model = "m"; }),
              StartsWith("job spec: field 'service.model': is only for protocol = \"openai\""));
  EXPECT_THAT(bad([](JobSpec& s) {
                s.service->protocol = "openai";
                s.service->model = "a\xff";
              }),
              StartsWith("job spec: field 'service.model': 'a?' is not a valid model name"));
  EXPECT_THAT(bad([](JobSpec& s) { s.service->health = ""; }),
              StartsWith("job spec: field 'service.health': '' must be a request path"));
  EXPECT_THAT(bad([](JobSpec& s) { s.service->health = "/a\nb"; }),
              HasSubstr("must be printable ASCII"));
  EXPECT_EQ(bad([](JobSpec& s) { s.service->max_concurrent = 0; }),
            "job spec: field 'service.max_concurrent': must be 1 to 4096, got 0");
  EXPECT_EQ(bad([](JobSpec& s) { s.service->drain_seconds = 3601; }),
            "job spec: field 'service.drain_seconds': must be 0 to 3600, got 3601");
  EXPECT_EQ(bad([](JobSpec& s) { s.service->replicas_per_machine = 65; }),
            "job spec: field 'service.replicas_per_machine': must be 1 to 64, got 65");
  // What a batch job has.
  EXPECT_EQ(bad([](JobSpec& s) { s.count = 3; }),
            "job spec: field 'count': a service has no 'count': its tasks are its replicas (set "
            "[service] replicas, or min_replicas and max_replicas)");
  EXPECT_THAT(bad([](JobSpec& s) {
                s.kind = TaskKind::kFrames;
                s.frames = "1-3";
              }),
              StartsWith("job spec: field 'frames': a service has no 'frames'"));
  EXPECT_THAT(bad([](JobSpec& s) {
                s.kind = TaskKind::kItems;
                s.items = {"a"};
              }),
              StartsWith("job spec: field 'items': a service has no 'items'"));
  EXPECT_THAT(bad([](JobSpec& s) { s.chunk = 4; }),
              StartsWith("job spec: field 'chunk': a service has no 'chunk'"));
  EXPECT_EQ(bad([](JobSpec& s) { s.outputs = {"out.txt"}; }),
            "job spec: field 'outputs': a service has no outputs: it produces responses, not "
            "files");
  EXPECT_THAT(bad([](JobSpec& s) { s.allow_empty_outputs = true; }),
              StartsWith("job spec: field 'allow_empty_outputs': a service has no outputs"));
  EXPECT_EQ(bad([](JobSpec& s) { s.timeout_s = 60; }),
            "job spec: field 'retry.timeout_s': a service has no timeout: its replicas run until "
            "it is stopped or scaled down");
  EXPECT_EQ(bad([](JobSpec& s) { s.command.push_back("{checkpoint_dir}"); }),
            "job spec: field 'command': element [4] '{checkpoint_dir}': a service's replicas "
            "keep no checkpoints");
}

TEST(ServiceSpec, ItsTasksAreItsReplicas) {
  JobSpec s = WireService();
  s.service->min_replicas = 0;
  s.service->max_replicas = 5;
  absl::StatusOr<uint64_t> n = TaskCount(s);
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, 5u);
  absl::StatusOr<std::vector<TaskParams>> tasks = ExpandTasks(s);
  ASSERT_TRUE(tasks.ok()) << tasks.status();
  ASSERT_EQ(tasks->size(), 5u);
  for (uint32_t i = 0; i < 5; ++i) {
    EXPECT_EQ((*tasks)[i].index, i);
    EXPECT_TRUE((*tasks)[i].chunk.frames.empty());
    EXPECT_TRUE((*tasks)[i].item.empty());
  }
  // A service is not sampled for the planner.
  EXPECT_THAT(CalibrationSpec(s, 2).status().message(), HasSubstr("a service has replicas"));
  // A batch count job still has its count.
  JobSpec batch;
  batch.name = "b";
  batch.command = {"true"};
  batch.count = 3;
  EXPECT_EQ(*TaskCount(batch), 3u);
  EXPECT_EQ(ExpandTasks(batch)->size(), 3u);
}

TEST(ServiceSpec, RenderCommandSubstitutesPortAndReplica) {
  const std::vector<std::string> command = {"server",  "--port={port}",     "--id",    "{replica}",
                                            "{index}", "{task_dir}/m.gguf", "{{port}}"};
  TaskParams task;
  task.index = 7;
  absl::StatusOr<std::vector<std::string>> argv =
      RenderCommand(command, task, "/w/t", "/w/c", ReplicaParams{8123});
  ASSERT_TRUE(argv.ok()) << argv.status();
  EXPECT_THAT(*argv,
              ElementsAre("server", "--port=8123", "--id", "7", "7", "/w/t/m.gguf", "{port}"));
  // Without a replica's params, as a batch task: refused, not rendered with a made-up port.
  argv = RenderCommand(command, task, "/w/t", "/w/c");
  EXPECT_EQ(argv.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(argv.status().message(), HasSubstr("{port} is only for a service's replica"));
  argv = RenderCommand({"s", "{replica}"}, task, "/w/t", "/w/c");
  EXPECT_THAT(argv.status().message(), HasSubstr("{replica} is only for a service's replica"));
  argv = RenderCommand({"s", "{port}"}, task, "/w/t", "/w/c", ReplicaParams{0});
  EXPECT_THAT(argv.status().message(), HasSubstr("no port was picked"));
  // A batch job's command renders as before, with or without the replica's params.
  const std::vector<std::string> batch = {"work", "{index}", "{task_dir}", "{checkpoint_dir}"};
  EXPECT_THAT(*RenderCommand(batch, task, "/w/t", "/w/c"),
              ElementsAre("work", "7", "/w/t", "/w/c"));
  EXPECT_THAT(*RenderCommand(batch, task, "/w/t", "/w/c", ReplicaParams{1}),
              ElementsAre("work", "7", "/w/t", "/w/c"));
}

// {port} and {replica} count in a service's command size like any placeholder: a command that
// repeats them past what the kernel takes is refused.
TEST(ServiceSpec, PortAndReplicaCountInTheCommandSize) {
  JobSpec s = WireService();
  s.service->max_replicas = 1000;
  s.command = {"s"};
  std::string arg;
  for (int i = 0; i < 30000; ++i) arg += "{port}";  // 180 KB once rendered
  s.command.push_back(arg);
  absl::Status st = Validate(s);
  EXPECT_EQ(st.code(), absl::StatusCode::kResourceExhausted) << st;
  EXPECT_THAT(st.message(), HasSubstr("field 'command': task 0 would start with"));
  s.command = {"s", std::string(20000, 'x') + "{replica}"};
  EXPECT_TRUE(Validate(s).ok());
}

}  // namespace
}  // namespace idlepool::spec
