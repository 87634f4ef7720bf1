// Reading a whole file, for the loaders (weight files, datasets): one place for what a file that
// cannot be read is.
#pragma once

#include <cstddef>
#include <filesystem>
#include <fstream>
#include <ios>
#include <string>
#include <system_error>
#include <vector>

namespace mixprec::detail {

/// Calls chunk(data, count) for the bytes of `file`, in order, 64 KiB at a time; calls
/// fail(reason), which must throw, for a directory, a file that cannot be opened or a read
/// error. istream::read turns the file buffer's errors into badbit, so no std::ios_base::failure
/// escapes (an istreambuf_iterator would let it, without the file's name).
template <class Chunk, class Fail>
void read_file_chunks(const std::filesystem::path& file, Chunk&& chunk, Fail&& fail) {
  std::error_code error;
  if (std::filesystem::is_directory(file, error)) fail(std::string("it is a directory."));
  std::ifstream in(file, std::ios::binary);
  if (!in) fail(std::string("it cannot be opened."));
  std::vector<char> buffer(std::size_t{1} << 16);
  while (in.read(buffer.data(), static_cast<std::streamsize>(buffer.size())) || in.gcount() > 0)
    chunk(buffer.data(), static_cast<std::size_t>(in.gcount()));
  if (in.bad()) fail(std::string("reading it failed."));
}

}  // namespace mixprec::detail
