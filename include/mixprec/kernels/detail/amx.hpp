// What the AMX micro-kernels (int8: gemm_native_int8.hpp, bfloat16: gemm_native_bf16.hpp) share:
// the tile shapes, the check that the CPU has AMX and that the OS lets this process use it, the
// one tile configuration both load and their step loop. Written with intrinsics in functions
// compiled for AMX alone, so the header builds for any x86-64 -march; the callers run them only
// after the check. AMX exists in 64-bit mode only (so do the compilers' intrinsics).
#pragma once

#include <cstddef>
#include <cstdint>

#include <mixprec/core/detail/x86_intrinsics.hpp>

namespace mixprec::kernels::detail::amx {

/// Units of 32 bits a tile row holds: the depth a kernel takes per step.
inline constexpr std::size_t step_units = 16;
/// The block of C the kernels hold in four tiles.
inline constexpr std::size_t tile_rows = 32;
inline constexpr std::size_t tile_columns = 32;

}  // namespace mixprec::kernels::detail::amx

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define MIXPREC_KERNELS_HAVE_AMX 1
#include <cpuid.h>
#include <immintrin.h>
#ifdef __linux__
#include <sys/syscall.h>
#include <unistd.h>
#endif

#define MIXPREC_KERNELS_AMX_TILE_TARGET __attribute__((target("amx-tile")))

namespace mixprec::kernels::detail::amx {

/// CPUID leaf 7 EDX bits of the AMX parts the kernels use.
inline constexpr unsigned bf16_feature = 1u << 22;
inline constexpr unsigned tile_feature = 1u << 24;
inline constexpr unsigned int8_feature = 1u << 25;

/// The CPU has AMX-TILE and `features` (CPUID leaf 7, EDX), the OS saves the tile state (XCR0 bits
/// 17 and 18) and, on Linux (5.16 and later), grants this process the tile data (arch_prctl
/// ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA: without it the first tile instruction faults). The
/// permission covers every thread of the process. Other systems: no.
inline bool cpu_supports(unsigned features) {
#ifdef __linux__
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) == 0) return false;
  if ((edx & (tile_feature | features)) != (tile_feature | features)) return false;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0 || (ecx & (1u << 27)) == 0) return false;  // OSXSAVE
  unsigned xcr0_low = 0, xcr0_high = 0;
  __asm__ volatile("xgetbv" : "=a"(xcr0_low), "=d"(xcr0_high) : "c"(0));
  constexpr unsigned tile_state = (1u << 17) | (1u << 18);
  if ((xcr0_low & tile_state) != tile_state) return false;
  constexpr long request_permission = 0x1023;  // ARCH_REQ_XCOMP_PERM
  constexpr long tile_data = 18;               // XFEATURE_XTILEDATA
  return syscall(SYS_arch_prctl, request_permission, tile_data) == 0;
#else
  (void)features;
  return false;
#endif
}

/// Palette 1, eight tiles of 16 rows of 64 bytes: both kernels hold a 32 x 32 block of 32-bit
/// sums in tiles 0-3 (0 1 above 2 3), two 16-row slices of op(A) in tiles 4-5 and two 16-column
/// slices of op(B) in tiles 6-7, each op(A) row and op(B) depth row 16 units of 32 bits.
struct alignas(64) tile_config {
  std::uint8_t palette = 1;
  std::uint8_t start_row = 0;
  std::uint8_t reserved[14] = {};
  std::uint16_t bytes_per_row[16] = {64, 64, 64, 64, 64, 64, 64, 64};
  std::uint8_t rows[16] = {16, 16, 16, 16, 16, 16, 16, 16};
};

/// The steps both kernels run on that configuration, adding to tiles 0-3 the products of `steps`
/// steps of 16 units: op(A)'s rows at a + r * a_units (32-bit units; a row's 16 units of step s
/// at s * 16), op(B)'s panel at b (16 units of 32 columns per step). `dot` is _tile_dpbssd or
/// _tile_dpbf16ps: a macro, because tile registers are named by immediates. Each operand tile is
/// loaded right before its first use, so that a load overlaps the products before it (tile
/// registers are not renamed; on Sapphire Rapids the int8 kernel ran about 30% faster so than
/// with its four loads ahead of its four products).
#define MIXPREC_KERNELS_AMX_STEPS(dot, steps, a, a_units, b)                                        \
  do {                                                                                              \
    const std::size_t amx_a_stride = (a_units) * sizeof(std::uint32_t);                            \
    const std::size_t amx_b_stride = ::mixprec::kernels::detail::amx::tile_columns * sizeof(std::uint32_t); \
    const std::uint32_t* amx_a_lower = (a) + 16 * (a_units);                                        \
    for (std::size_t amx_step = 0; amx_step < (steps); ++amx_step) {                                \
      const std::size_t amx_unit = amx_step * ::mixprec::kernels::detail::amx::step_units;          \
      const std::uint32_t* amx_b_step = (b) + amx_unit * ::mixprec::kernels::detail::amx::tile_columns; \
      _tile_loadd(4, (a) + amx_unit, amx_a_stride);                                                 \
      _tile_loadd(6, amx_b_step, amx_b_stride);                                                     \
      dot(0, 4, 6);                                                                                 \
      _tile_loadd(7, amx_b_step + 16, amx_b_stride);                                                \
      dot(1, 4, 7);                                                                                 \
      _tile_loadd(5, amx_a_lower + amx_unit, amx_a_stride);                                         \
      dot(2, 5, 6);                                                                                 \
      dot(3, 5, 7);                                                                                 \
    }                                                                                               \
  } while (false)

/// The 32 x 32 block of sums in tiles 0-3 (0 1 above 2 3), as both kernels hold it: zeroed,
/// loaded from and stored to `c`, whose rows are `ldc` elements (float or int32) apart.
MIXPREC_KERNELS_AMX_TILE_TARGET inline void zero_sums() {
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
}
template <class T>
MIXPREC_KERNELS_AMX_TILE_TARGET inline void load_sums(const T* c, std::size_t ldc) {
  const std::size_t stride = ldc * sizeof(T);
  _tile_loadd(0, c, stride);
  _tile_loadd(1, c + 16, stride);
  _tile_loadd(2, c + 16 * ldc, stride);
  _tile_loadd(3, c + 16 * ldc + 16, stride);
}
template <class T>
MIXPREC_KERNELS_AMX_TILE_TARGET inline void store_sums(T* c, std::size_t ldc) {
  const std::size_t stride = ldc * sizeof(T);
  _tile_stored(0, c, stride);
  _tile_stored(1, c + 16, stride);
  _tile_stored(2, c + 16 * ldc, stride);
  _tile_stored(3, c + 16 * ldc + 16, stride);
}

/// Loads the tile configuration on this thread (which zeroes the tiles): before the first tile.
MIXPREC_KERNELS_AMX_TILE_TARGET inline void begin() {
  static const tile_config config;
  _tile_loadconfig(&config);
}

/// Releases this thread's tile state (the OS then need not save it): after the last tile.
MIXPREC_KERNELS_AMX_TILE_TARGET inline void end() { _tile_release(); }

}  // namespace mixprec::kernels::detail::amx

#endif  // x86 with GCC or Clang
