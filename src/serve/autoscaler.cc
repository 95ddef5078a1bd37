// The autoscaling decision of one service (serve/autoscaler.h).
#include "serve/autoscaler.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace idlepool::serve {

namespace {

// t + d, Time::max() past the end of the clock.
Time After(Time t, Micros d) {
  if (d > Time::max() - t) return Time::max();
  return t + d;
}

double Seconds(Micros d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

Status Autoscaler::Validate(const AutoscaleConfig& c) {
  if (c.min_replicas > c.max_replicas)
    return {Code::kInvalidArgument, "min_replicas: above max_replicas"};
  if (!std::isfinite(c.target_in_flight) || c.target_in_flight <= 0)
    return {Code::kInvalidArgument, "target_in_flight: must be a number > 0"};
  if (c.upscale_delay < Micros::zero())
    return {Code::kInvalidArgument, "upscale_delay: must be >= 0"};
  if (c.downscale_delay < Micros::zero())
    return {Code::kInvalidArgument, "downscale_delay: must be >= 0"};
  return {};
}

Autoscaler::Autoscaler(AutoscaleConfig config) : config_(config) {
  config_.max_replicas = std::max(config_.max_replicas, config_.min_replicas);
  if (!std::isfinite(config_.target_in_flight) || config_.target_in_flight <= 0)
    config_.target_in_flight = AutoscaleConfig{}.target_in_flight;
  config_.upscale_delay = std::max(config_.upscale_delay, Micros::zero());
  config_.downscale_delay = std::max(config_.downscale_delay, Micros::zero());
}

uint32_t Autoscaler::Decide(const AutoscaleInput& in, Time now) {
  const uint32_t base = std::clamp(in.replicas, config_.min_replicas, config_.max_replicas);
  if (fired_from_ && *fired_from_ != base) {  // applied, or scaled by hand: delays start over
    up_since_.reset();
    down_since_.reset();
    fired_from_.reset();
  }
  const uint32_t wanted = Wanted(in, base);
  next_change_.reset();
  uint32_t result = base;
  if (wanted > base) {
    down_since_.reset();
    result = Up(base, wanted, base == 0 && in.queued > 0, now);
  } else if (wanted < base) {
    up_since_.reset();
    result = Down(base, wanted, in.start_time, now);
  } else {
    up_since_.reset();
    down_since_.reset();
    fired_from_.reset();
  }
  Explain(in, base, result, now);
  return result;
}

// Rules 1 to 4 of the header: what the demand asks for, before the delays.
uint32_t Autoscaler::Wanted(const AutoscaleInput& in, uint32_t base) const {
  const double demand = static_cast<double>(in.in_flight) + static_cast<double>(in.queued);
  const double per_target = std::ceil(demand / config_.target_in_flight);
  uint32_t wanted =
      per_target >= config_.max_replicas ? config_.max_replicas : static_cast<uint32_t>(per_target);
  wanted = std::max(wanted, config_.min_replicas);
  // Rules 2 and 3. Asked for and not ready: starting, or not placed yet by the core.
  const uint64_t seen = uint64_t{in.ready} + in.starting;
  const uint64_t pending = in.starting + (base > seen ? base - seen : 0);
  if (in.queued > 0) {
    wanted = std::max(wanted, base);
    if (pending == 0 && base < config_.max_replicas) wanted = std::max(wanted, base + 1);
  }
  return wanted;
}

uint32_t Autoscaler::Up(uint32_t base, uint32_t wanted, bool from_zero, Time now) {
  if (!up_since_) up_since_ = now;
  if (now - *up_since_ >= config_.upscale_delay) {
    fired_from_ = base;
    return wanted;
  }
  next_change_ = After(*up_since_, config_.upscale_delay);
  // From zero the queue waits on the first replica: ask for it now, the rest after the delay
  // (the delay keeps running, since wanted stays above the one replica).
  return from_zero ? 1 : base;
}

uint32_t Autoscaler::Down(uint32_t base, uint32_t wanted, Micros start_time, Time now) {
  start_time = std::max(start_time, Micros::zero());
  const Micros twice_start = start_time > Micros::max() / 2 ? Micros::max() : 2 * start_time;
  const Micros delay = std::max(config_.downscale_delay, twice_start);
  if (!down_since_) {
    down_since_ = now;
    down_peak_ = wanted;
  }
  down_peak_ = std::max(down_peak_, wanted);
  if (now - *down_since_ >= delay) {
    fired_from_ = base;
    return std::max(down_peak_, config_.min_replicas);
  }
  next_change_ = After(*down_since_, delay);
  return base;
}

void Autoscaler::Explain(const AutoscaleInput& in, uint32_t base, uint32_t result, Time now) {
  char buf[256];
  int n = std::snprintf(buf, sizeof buf,
                        "%u queued, %u in flight over %u replicas (%u ready, %u starting; "
                        "target %g): ",
                        in.queued, in.in_flight, in.replicas, in.ready, in.starting,
                        config_.target_in_flight);
  const size_t at = n > 0 ? std::min<size_t>(n, sizeof buf - 1) : 0;
  const double wait = next_change_ ? Seconds(*next_change_ - now) : 0;
  if (result > in.replicas && in.replicas == 0 && in.queued > 0) {
    std::snprintf(buf + at, sizeof buf - at, "up to %u from zero", result);
  } else if (result != base) {
    std::snprintf(buf + at, sizeof buf - at, "%s to %u", result > base ? "up" : "down", result);
  } else if (up_since_) {
    std::snprintf(buf + at, sizeof buf - at, "hold %u, up in %.1f s if it lasts", result, wait);
  } else if (down_since_) {
    std::snprintf(buf + at, sizeof buf - at, "hold %u, down to %u in %.1f s if it lasts", result,
                  down_peak_, wait);
  } else if (result != in.replicas) {
    std::snprintf(buf + at, sizeof buf - at, "%u, within min %u and max %u", result,
                  config_.min_replicas, config_.max_replicas);
  } else {
    std::snprintf(buf + at, sizeof buf - at, "hold %u", result);
  }
  reason_ = buf;
}

}  // namespace idlepool::serve
