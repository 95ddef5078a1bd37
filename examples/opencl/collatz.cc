// idlepool-opencl-example: a small OpenCL program with its own kernel, for a GPU job.
//
// Task N computes the Collatz stopping time (steps to reach 1) of every integer in
// [1 + N*COUNT, (N+1)*COUNT] on an OpenCL device, checks every value against the same
// computation on the CPU, and writes a summary (device, range, sum of steps, the longest
// chain). Integer arithmetic only, so device and CPU must agree exactly.
//
//   idlepool-opencl-example [--device P:D] [--task N] [--count COUNT] [--out FILE] [--list]
//
// The device: --device, else the first entry of $IDLEPOOL_OPENCL_DEVICES (the OpenCL ids the
// worker gave this attempt, comma-separated), else the first device of the first platform that
// has one. "P:D" indexes clGetPlatformIDs and clGetDeviceIDs(CL_DEVICE_TYPE_ALL), as idlepool's
// discovery does (`idlepool worker --print-resources`).
//
// Exit status: 0 verified; 1 a device result differs from the CPU's; 2 bad usage or no such
// device; 3 an OpenCL call failed.
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

const char* kKernel = R"CL(
__kernel void collatz(ulong first, uint limit, __global uint* steps) {
  size_t i = get_global_id(0);
  ulong x = first + i;
  uint n = 0;
  while (x != 1 && n < limit) {
    x = (x & 1) ? 3 * x + 1 : x >> 1;
    ++n;
  }
  steps[i] = n;
}
)CL";

constexpr uint32_t kLimit = 100000;  // steps; no number below 2^40 comes close

uint32_t CollatzCpu(uint64_t x) {
  uint32_t n = 0;
  while (x != 1 && n < kLimit) {
    x = (x & 1) ? 3 * x + 1 : x >> 1;
    ++n;
  }
  return n;
}

int Fail(const char* what, cl_int err) {
  std::fprintf(stderr, "idlepool-opencl-example: %s failed (OpenCL error %d)\n", what, err);
  return 3;
}

std::string DeviceString(cl_device_id d, cl_device_info what) {
  char buf[512] = {};
  clGetDeviceInfo(d, what, sizeof buf - 1, buf, nullptr);
  return buf;
}

// Every platform's devices (CL_DEVICE_TYPE_ALL), by platform.
std::vector<std::vector<cl_device_id>> AllDevices() {
  std::vector<std::vector<cl_device_id>> out;
  cl_uint np = 0;
  if (clGetPlatformIDs(0, nullptr, &np) != CL_SUCCESS || np == 0) return out;
  std::vector<cl_platform_id> ps(np);
  if (clGetPlatformIDs(np, ps.data(), nullptr) != CL_SUCCESS) return out;
  for (cl_platform_id p : ps) {
    cl_uint nd = 0;
    std::vector<cl_device_id> ds;
    if (clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, nullptr, &nd) == CL_SUCCESS && nd > 0) {
      ds.resize(nd);
      if (clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, nd, ds.data(), nullptr) != CL_SUCCESS) ds.clear();
    }
    out.push_back(std::move(ds));
  }
  return out;
}

bool ParseU64(const char* s, uint64_t* v) {
  if (s == nullptr || *s == '\0') return false;
  char* end = nullptr;
  *v = std::strtoull(s, &end, 10);
  return *end == '\0' && s[0] != '-';
}

}  // namespace

int main(int argc, char** argv) {
  std::string device_id, out_path;
  uint64_t task = 0, count = 100000;
  bool list = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    if (a == "--list") {
      list = true;
    } else if (a == "--device" && v) {
      device_id = v, ++i;
    } else if (a == "--out" && v) {
      out_path = v, ++i;
    } else if (a == "--task" && ParseU64(v, &task)) {
      ++i;
    } else if (a == "--count" && ParseU64(v, &count) && count > 0 && count <= (1u << 26)) {
      ++i;
    } else {
      std::fprintf(stderr,
                   "usage: idlepool-opencl-example [--device P:D] [--task N] [--count 1..%u] "
                   "[--out FILE] [--list]\n",
                   1u << 26);
      return 2;
    }
  }
  const auto devices = AllDevices();
  if (list) {
    for (size_t p = 0; p < devices.size(); ++p) {
      for (size_t d = 0; d < devices[p].size(); ++d) {
        std::printf("%zu:%zu %s\n", p, d, DeviceString(devices[p][d], CL_DEVICE_NAME).c_str());
      }
    }
    return 0;
  }
  if (device_id.empty()) {
    const char* env = std::getenv("IDLEPOOL_OPENCL_DEVICES");
    if (env != nullptr && *env != '\0') device_id = std::string(env).substr(0, std::strcspn(env, ","));
  }
  cl_device_id dev = nullptr;
  if (device_id.empty()) {
    for (size_t p = 0; p < devices.size() && dev == nullptr; ++p) {
      if (!devices[p].empty()) {
        dev = devices[p][0];
        device_id = std::to_string(p) + ":0";
      }
    }
    if (dev == nullptr) {
      std::fprintf(stderr, "idlepool-opencl-example: no OpenCL device\n");
      return 2;
    }
  } else {
    unsigned p = 0, d = 0;
    char tail = 0;
    if (std::sscanf(device_id.c_str(), "%u:%u%c", &p, &d, &tail) != 2 || p >= devices.size() ||
        d >= devices[p].size()) {
      std::fprintf(stderr, "idlepool-opencl-example: no OpenCL device '%s'\n", device_id.c_str());
      return 2;
    }
    dev = devices[p][d];
  }

  cl_int err = CL_SUCCESS;
  cl_context ctx = clCreateContext(nullptr, 1, &dev, nullptr, nullptr, &err);
  if (err != CL_SUCCESS) return Fail("clCreateContext", err);
  cl_command_queue queue = clCreateCommandQueue(ctx, dev, 0, &err);
  if (err != CL_SUCCESS) return Fail("clCreateCommandQueue", err);
  cl_program prog = clCreateProgramWithSource(ctx, 1, &kKernel, nullptr, &err);
  if (err != CL_SUCCESS) return Fail("clCreateProgramWithSource", err);
  if ((err = clBuildProgram(prog, 1, &dev, "", nullptr, nullptr)) != CL_SUCCESS) {
    char log[4096] = {};
    clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, nullptr);
    std::fprintf(stderr, "%s\n", log);
    return Fail("clBuildProgram", err);
  }
  cl_kernel kernel = clCreateKernel(prog, "collatz", &err);
  if (err != CL_SUCCESS) return Fail("clCreateKernel", err);
  cl_mem buf = clCreateBuffer(ctx, CL_MEM_WRITE_ONLY, count * sizeof(cl_uint), nullptr, &err);
  if (err != CL_SUCCESS) return Fail("clCreateBuffer", err);
  const cl_ulong first = 1 + task * count;
  const cl_uint limit = kLimit;
  if ((err = clSetKernelArg(kernel, 0, sizeof first, &first)) != CL_SUCCESS ||
      (err = clSetKernelArg(kernel, 1, sizeof limit, &limit)) != CL_SUCCESS ||
      (err = clSetKernelArg(kernel, 2, sizeof buf, &buf)) != CL_SUCCESS) {
    return Fail("clSetKernelArg", err);
  }
  const size_t global = count;
  err = clEnqueueNDRangeKernel(queue, kernel, 1, nullptr, &global, nullptr, 0, nullptr, nullptr);
  if (err != CL_SUCCESS) return Fail("clEnqueueNDRangeKernel", err);
  std::vector<cl_uint> steps(count);
  err = clEnqueueReadBuffer(queue, buf, CL_TRUE, 0, count * sizeof(cl_uint), steps.data(), 0,
                            nullptr, nullptr);
  if (err != CL_SUCCESS) return Fail("clEnqueueReadBuffer", err);

  uint64_t sum = 0, longest_at = first;
  uint32_t longest = 0;
  for (uint64_t i = 0; i < count; ++i) {
    const uint32_t want = CollatzCpu(first + i);
    if (steps[i] != want) {
      std::fprintf(stderr,
                   "idlepool-opencl-example: MISMATCH at %llu: device says %u steps, CPU %u\n",
                   static_cast<unsigned long long>(first + i), steps[i], want);
      return 1;
    }
    sum += want;
    if (want > longest) longest = want, longest_at = first + i;
  }
  clReleaseMemObject(buf);
  clReleaseKernel(kernel);
  clReleaseProgram(prog);
  clReleaseCommandQueue(queue);
  clReleaseContext(ctx);

  FILE* out = out_path.empty() ? stdout : std::fopen(out_path.c_str(), "w");
  if (out == nullptr) {
    std::fprintf(stderr, "idlepool-opencl-example: cannot write %s\n", out_path.c_str());
    return 2;
  }
  std::fprintf(out,
               "device %s (%s)\nrange %llu..%llu\nsum_steps %llu\nlongest %u steps at %llu\n"
               "verified on the CPU\n",
               DeviceString(dev, CL_DEVICE_NAME).c_str(), device_id.c_str(),
               static_cast<unsigned long long>(first),
               static_cast<unsigned long long>(first + count - 1),
               static_cast<unsigned long long>(sum), longest,
               static_cast<unsigned long long>(longest_at));
  if (out != stdout && std::fclose(out) != 0) return 2;
  return 0;
}
