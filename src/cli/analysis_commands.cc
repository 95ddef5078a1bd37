// The subcommands that look into jobs and plan them: profile, report, timeline, plan, sim.
// Their work is in profile_command.h, report_command.h, timeline_command.h, plan_command.h,
// plan_job.h and sim_command.h; here are their options.
#include <cstdio>
#include <memory>

#include "cli/command.h"
#include "cli/plan_command.h"
#include "cli/plan_job.h"
#include "cli/profile_command.h"
#include "cli/report_command.h"
#include "cli/sim_command.h"
#include "cli/timeline_command.h"

namespace idlepool::cli {

// A client subcommand that needs only a PoolClient and its options.
template <typename Options>
Command ClientCommand(CLI::App* sub, std::shared_ptr<Options> o, Common& common,
                      int (*run)(PoolClient&, const Options&)) {
  return {sub, [o, &common, run] {
            if (int rc = NeedCredentials(common); rc != 0) return rc;
            PoolClient client = MakeClient(common);
            return run(client, *o);
          }};
}

Command AddProfileCommand(CLI::App& app, Common& common) {
  auto pro = std::make_shared<ProfileOptions>();
  auto* profilec = app.add_subcommand(
      "profile", "where the time of succeeded attempts went (stage, run, upload), per worker");
  AddClientOptions(profilec, common);
  profilec->add_option("JOB", pro->job, "job id");
  profilec->add_option("--key", pro->key, "every job with this profile key (status --json)");
  profilec->add_option("--spec", pro->spec_file,
                       "every job with the profile key of this job spec (TOML), not submitted");
  profilec->add_option("--max-samples", pro->max_samples, "newest attempts (default 200, max 5000)")
      ->check(CLI::Range(1u, 5000u));
  profilec->add_flag("--json", pro->json, "print one JSON object");
  return ClientCommand(profilec, pro, common, &RunProfile);
}

Command AddReportCommand(CLI::App& app, Common& common) {
  auto rep = std::make_shared<ReportCommandOptions>();
  auto* reportc = app.add_subcommand(
      "report", "a job's report as one self-contained HTML file (timeline, tasks, log tails)");
  AddClientOptions(reportc, common);
  reportc->add_option("JOB", rep->job, "job id")->required();
  reportc->add_option("--out", rep->out, "the file to write (- for stdout)")->required();
  reportc->add_flag("--svg", rep->svg, "write the timeline alone, as SVG");
  reportc->add_option("--max-attempts", rep->max_attempts, "newest attempts (default 20000)")
      ->check(CLI::Range(1u, 1'000'000u));
  return ClientCommand(reportc, rep, common, &RunReport);
}

Command AddTimelineCommand(CLI::App& app, Common& common) {
  auto tlo = std::make_shared<TimelineOptions>();
  auto* timelinec = app.add_subcommand(
      "timeline", "a job's attempts and its workers' events, for scripts (`report` draws it)");
  AddClientOptions(timelinec, common);
  timelinec->add_option("JOB", tlo->job, "job id")->required();
  timelinec->add_option("--max-attempts", tlo->max_attempts, "newest attempts (default 20000)");
  timelinec->add_flag("--json", tlo->json, "print the JobTimeline as protobuf JSON");
  return ClientCommand(timelinec, tlo, common, &RunTimeline);
}

Command AddPlanCommand(CLI::App& app, Common& common) {
  auto po = std::make_shared<PlanPatternOptions>();
  auto pj = std::make_shared<PlanJobOptions>();
  auto* planc = app.add_subcommand(
      "plan",
      "before running: does the pool beat one machine? JOB.toml (predicted makespans, "
      "calibrating first when the job has no history) or --pattern for coupled work");
  AddClientOptions(planc, common);
  planc->add_option("JOB", pj->job_file, "job spec (TOML) to plan")->check(CLI::ExistingFile);
  planc->add_option("--calibrate", pj->calibrate,
                    "JOB: tasks in the calibration run when there is no history (0 or absent: "
                    "one per available worker, 2 to 8)");
  planc->add_flag("--no-calibrate", pj->no_calibrate,
                  "JOB: never submit a calibration run (fail without history)");
  planc->add_option("--task-seconds", pj->task_seconds,
                    "JOB: compute seconds per task on every worker (plan without a profile)");
  planc->add_option("--output-bytes", pj->output_bytes,
                    "JOB: output bytes per task (4MiB, 100K; default: the profile's median)");
  planc->add_option("--workers", pj->workers_csv, "JOB: plan on these workers only (a,b,c)");
  auto* pattern_opt =
      planc->add_option("--pattern", po->pattern, "allreduce, pipeline or tensor (coupled work)");
  planc->add_option("--machines", po->machines, "machines (pipeline: stages)")
      ->capture_default_str();
  auto* compute_opt = planc->add_option(
      "--compute-ms", po->compute_ms,
      "--pattern: one machine's compute per step (allreduce) or per token (pipeline, tensor)");
  planc->add_option("--fixed-ms", po->fixed_ms, "allreduce: per-step time that is not divided");
  planc->add_option("--bytes", po->bytes,
                    "allreduce: gradient bytes per step; pipeline: bytes per hop; tensor: bytes "
                    "of one layer's activation (512K, 100M, 1.5G: binary)");
  planc->add_option("--layers", po->layers, "tensor: layers")->capture_default_str();
  planc->add_flag("--ring", po->ring,
                  "pipeline: the token returns to the first stage (hops = stages)");
  planc->add_option("--link", po->link, "bandwidth between two machines: 100mbit, 1gbit, 125MB/s")
      ->capture_default_str();
  planc->add_option("--rtt-ms", po->rtt_ms, "round trip between two machines")
      ->capture_default_str();
  planc->add_option("--overhead-ms", po->overhead_ms, "software cost per message")
      ->capture_default_str();
  planc->add_flag("--json", pj->json, "print one JSON object");
  return {planc, [=, &common] {
            if (pj->job_file.empty() == pattern_opt->empty()) {
              std::fprintf(stderr,
                           "idlepool plan: give either a job spec (JOB.toml) or --pattern\n");
              return 2;
            }
            if (!pattern_opt->empty()) {
              if (compute_opt->empty()) {
                std::fprintf(stderr, "idlepool plan: --pattern needs --compute-ms\n");
                return 2;
              }
              po->json = pj->json;
              return RunPlanPattern(*po);
            }
            if (int rc = NeedCredentials(common); rc != 0) return rc;
            PoolClient client = MakeClient(common);
            return RunPlanJob(client, *pj);
          }};
}

Command AddSimCommand(CLI::App& app) {
  auto so = std::make_shared<SimOptions>();
  auto* simc = app.add_subcommand(
      "sim",
      "simulate the pool deterministically: a job on N simulated workers that follow an "
      "availability trace or model (or, with --dst, many seeds of fault injection)");
  simc->add_option("--workers", so->workers, "simulated workers")
      ->capture_default_str()
      ->check(CLI::Range(uint64_t{1}, uint64_t{1'000'000}));
  auto* trace_opt = simc->add_option("--trace", so->trace,
                                     "availability trace: spot .json, FTA .tab, or STUNner text "
                                     "(each worker follows one lane; lanes wrap around)");
  simc->add_option("--model", so->model,
                   "synthetic churn from a fitted Weibull model: nd07cpu, microsoft99, "
                   "overnet03, skype06, g5k06, lanl05")
      ->excludes(trace_opt);
  simc->add_option("--horizon", so->horizon_s, "seconds of model lanes sampled (they repeat)")
      ->capture_default_str();
  auto* job_opt = simc->add_option("--job", so->job,
                                   "a job spec (TOML): its task count, resources, max_attempts "
                                   "and timeout");
  simc->add_option("--tasks", so->tasks, "tasks (without --job)")
      ->capture_default_str()
      ->excludes(job_opt);
  simc->add_option("--users", so->users,
                   "a multi-user workload (TOML: [[user]] name, share, max_slots; [[job]] user, "
                   "at_s, tasks, task_seconds, cpus, priority, repeat, every_s): prints each "
                   "user's slowdown against running alone, under fair share and under FIFO")
      ->excludes(job_opt);
  simc->add_option("--task-seconds", so->task_seconds,
                   "task duration on a speed-1 worker: N, uniform:A:B, loguniform:A:B, exp:MEAN, "
                   "lognormal:MEDIAN:SIGMA, pareto:MIN:ALPHA, tiers:A,B,...")
      ->capture_default_str();
  simc->add_option("--speeds", so->speeds, "worker speed distribution (same forms)")
      ->capture_default_str();
  simc->add_option("--slots", so->slots, "slots per worker")
      ->capture_default_str()
      ->check(CLI::Range(1u, 1024u));
  simc->add_option("--policy", so->policy, "scheduling policy")->capture_default_str();
  simc->add_option("--seed", so->seed, "seed (the same seed gives the same run)")
      ->capture_default_str();
  simc->add_option("--chunk", so->chunk,
                   "group frames into tasks: N frames per task, or 'auto' (toward "
                   "--target-runtime, bounded by the tail); --tasks then counts frames and "
                   "--task-seconds is per frame");
  simc->add_option("--target-runtime", so->target_runtime_s, "with --chunk auto: seconds per task")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  simc->add_option("--task-overhead", so->task_overhead_s,
                   "start-up seconds every task pays (loading a scene or model)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  simc->add_option("--checkpoint-interval", so->checkpoint_interval_s,
                   "tasks checkpoint every N s of running (0: never)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  simc->add_flag("--checkpoint-on-vacate", so->checkpoint_on_vacate,
                 "tasks save their progress when stopped for the owner");
  simc->add_option("--hard-down", so->hard_down_fraction,
                   "fraction of machine downs with no goodbye (power loss)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  simc->add_option("--lease", so->lease_s, "lease timeout, seconds")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 3600.0));
  simc->add_option("--heartbeat", so->heartbeat_s, "worker heartbeat, seconds")
      ->capture_default_str()
      ->check(CLI::Range(0.01, 3600.0));
  simc->add_option("--tick", so->tick_s, "coordinator tick, seconds")
      ->capture_default_str()
      ->check(CLI::Range(0.01, 3600.0));
  simc->add_option("--max-days", so->max_days, "give up after this many simulated days")
      ->capture_default_str()
      ->check(CLI::Range(0.001, 3650.0));
  simc->add_flag("--json", so->json, "print one JSON object");
  simc->add_flag("--no-timing", so->no_timing,
                 "leave out wall-time figures, so two runs of one seed print the same bytes");
  simc->add_flag("--dst", so->dst,
                 "deterministic simulation testing: random workloads and faults, invariants "
                 "checked after every step");
  simc->add_option("--seeds", so->seeds, "with --dst: how many seeds, from --seed on")
      ->capture_default_str()
      ->check(CLI::Range(uint64_t{1}, uint64_t{100'000'000}));
  simc->add_option("--plant", so->plant,
                   "with --dst: plant a known bug in the core (tests the harness): no-fencing, "
                   "forget-lost-tasks, no-lease-expiry, count-preemptions, strand-preempted, "
                   "preemptions-as-losses, pin-retries, fifo-across-users");
  simc->add_flag("--verbose", so->verbose, "with --dst: one line per seed");
  return {simc, [so] { return RunSimCommand(*so); }};
}

}  // namespace idlepool::cli
