// Conversions between the wire contract (proto/idlepool.proto) and the spec/core types.
// Pure functions; thread-safe.
#pragma once

#include "core/types.h"
#include "idlepool.pb.h"
#include "spec/spec.h"

namespace idlepool::wire {

// spec -> wire. Input blobs are not known here: the caller fills Input.sha256/size/mode.
v1::JobSpec ToProto(const spec::JobSpec& spec);
// wire -> spec, for validation on the coordinator. Inputs' `source` is left empty.
spec::JobSpec FromProto(const v1::JobSpec& proto);

v1::TaskParams ToProto(const spec::TaskParams& task);
spec::TaskParams FromProto(const v1::TaskParams& proto);

v1::Resources ToProto(const core::Resources& r);
core::Resources FromProto(const v1::Resources& r);

}  // namespace idlepool::wire
