// What this CPU means for ONNX Runtime's integer kernels (runtime.h).
#include "mixprec/runtime.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace mixprec {

bool cpu_u8s8_kernels_saturate() {
#if defined(__x86_64__) || defined(__i386__)
  // AVX512-VNNI: CPUID.(7,0):ECX bit 11, usable only when the OS saves the AVX-512 state
  // (__builtin_cpu_supports checks XCR0); AVX-VNNI: CPUID.(7,1):EAX bit 4.
  if (__builtin_cpu_supports("avx512vnni")) return false;
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) && ((eax >> 4) & 1u) != 0 && __builtin_cpu_supports("avx2")) {
    return false;
  }
  return true;
#else
  return false;  // ARM's and other CPUs' integer dot products accumulate in int32
#endif
}

}  // namespace mixprec
