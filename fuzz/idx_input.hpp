// The idx_file target's input layout, shared with fuzz_seed_corpora which writes its seeds:
//   1 byte    flags: bit 0 set = the two files follow uncompressed and the harness gzips them
//             (the fuzzer then explores the IDX reader), clear = they follow as stored (gzip
//             bytes, so that the gzip reader is explored too)
//   4 bytes   the images file's length L, little-endian
//   L bytes   t10k-images-idx3-ubyte(.gz); the rest: t10k-labels-idx1-ubyte(.gz)
#pragma once

#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

namespace mixprec::fuzz {

inline constexpr std::uint8_t harness_gzips = 1;

struct idx_files {
  std::string images, labels;  // the files' bytes, as load_split reads them
};

/// gzip's format (zlib, one member), as Debian's files are.
inline std::string gzip(std::string_view data) {
  z_stream stream{};
  if (deflateInit2(&stream, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) std::abort();
  std::string out(deflateBound(&stream, static_cast<uLong>(data.size())), '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  stream.avail_in = static_cast<uInt>(data.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  if (deflate(&stream, Z_FINISH) != Z_STREAM_END) std::abort();
  out.resize(stream.total_out);
  deflateEnd(&stream);
  return out;
}

inline std::string encode_idx_input(std::uint8_t flags, std::string_view images, std::string_view labels) {
  std::string input(1, static_cast<char>(flags));
  for (int shift = 0; shift < 32; shift += 8) input += static_cast<char>((images.size() >> shift) & 0xff);
  return input.append(images).append(labels);
}

inline std::optional<idx_files> decode_idx_input(std::string_view input) {
  if (input.size() < 5) return std::nullopt;
  std::size_t length = 0;
  for (int i = 0; i < 4; ++i) length |= std::size_t{static_cast<std::uint8_t>(input[1 + i])} << (8 * i);
  const std::string_view files = input.substr(5);
  if (length > files.size()) return std::nullopt;
  idx_files result{std::string(files.substr(0, length)), std::string(files.substr(length))};
  if (static_cast<std::uint8_t>(input[0]) & harness_gzips) {
    result.images = gzip(result.images);
    result.labels = gzip(result.labels);
  }
  return result;
}

}  // namespace mixprec::fuzz
