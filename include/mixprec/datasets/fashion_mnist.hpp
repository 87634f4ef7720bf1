// Fashion-MNIST, as Keras' keras.datasets.fashion_mnist.load_data() gives it, read from the files
// of Debian's dataset-fashion-mnist package (nothing is downloaded):
//
//   auto [train, test] = datasets::fashion_mnist::load_data();   // or load_data("/some/dir")
//   train.x;                                      // Tensor<std::uint8_t, dynamic, 28, 28>: 60000 images
//   train.y;                                      // Tensor<std::uint8_t, dynamic>: class ids 0..9
//   auto x = datasets::scaled<784>(train.x);      // Tensor<float, dynamic, 784>, values in [0, 1]
//   auto x4 = datasets::scaled<28, 28, 1>(test.x); // Tensor<float, dynamic, 28, 28, 1> for Conv2D
//
// The datasets floor sits on the layers floor's tensor types (layers/tensor.hpp) and zlib only,
// and nothing else includes it: link mixprec::datasets (mixprec::mixprec and ZLIB::ZLIB), or add
// -lz. Files are gzip-compressed IDX files (train-images-idx3-ubyte.gz, ...). Every problem with
// them is a std::invalid_argument naming the file and the problem (as for weight files): a
// missing file (with the package to install), data that is not gzip or is corrupt, a wrong IDX
// magic number or image size, a payload shorter or longer than the header says, image and label
// counts that differ, a label that is not a class id. Counts from a header are checked: one
// claiming 2^32 images costs memory for the data actually there, not for the claim.
#pragma once

#include <zlib.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <new>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <mixprec/core/detail/file_chunks.hpp>
#include <mixprec/layers/tensor.hpp>
#include <mixprec/runtime/detail/message_text.hpp>

namespace mixprec::datasets {

/// Images and their labels: `auto [x, y] = split;` works too.
template <class Images, class Labels>
struct Split {
  Images x;
  Labels y;
  /// The number of examples.
  std::size_t size() const { return y.batch(); }
};

/// uint8 images as float32 values in [0, 1] (x / 255, as Keras users write it), in any shape of
/// the same number of values per image: scaled<784>(x) for a Dense model, scaled<28, 28, 1>(x)
/// for a Conv2D one.
template <std::size_t... To, std::size_t... From>
Tensor<float, dynamic, To...> scaled(const Tensor<std::uint8_t, dynamic, From...>& images) {
  static_assert(shape<dynamic, To...>::static_size == shape<dynamic, From...>::static_size,
                "datasets::scaled<Extents...>(images): the extents must hold the same number of values per image.");
  value_buffer<float> values(images.size());
  std::transform(images.values().begin(), images.values().end(), values.begin(),
                 [](std::uint8_t v) { return static_cast<float>(v) / 255.0f; });
  return Tensor<float, dynamic, To...>(std::move(values));
}

namespace detail {

[[noreturn]] inline void bad_dataset_file(const std::filesystem::path& file, const std::string& why) {
  throw std::invalid_argument("Cannot load '" + mixprec::detail::quote_for_message(file.string()) + "': " + why);
}

/// a * b, or an error naming the file when it does not fit a std::size_t.
inline std::size_t checked_product(std::size_t a, std::size_t b, const std::filesystem::path& file) {
  if (b != 0 && a > std::numeric_limits<std::size_t>::max() / b)
    bad_dataset_file(file, "the header's counts (" + std::to_string(a) + " x " + std::to_string(b) +
                               " bytes) overflow this machine's sizes.");
  return a * b;
}

/// A gzip file decompressed on demand (zlib's inflate over the file's bytes in memory), so that
/// a header can be checked before its payload is read.
class gunzip {
 public:
  explicit gunzip(std::filesystem::path file, std::string_view missing_hint) : file_(std::move(file)) {
    std::error_code error;
    if (!std::filesystem::exists(file_, error))
      bad_dataset_file(file_, "no such file. " + std::string(missing_hint));
    mixprec::detail::read_file_chunks(
        file_, [&](const char* data, std::size_t count) { compressed_.insert(compressed_.end(), data, data + count); },
        [&](const std::string& why) { bad_dataset_file(file_, why); });
    if (!gzip_member_at(0)) bad_dataset_file(file_, "not a gzip file (it does not start with the bytes 1f 8b).");
    if (inflateInit2(&stream_, 16 + MAX_WBITS) != Z_OK) throw std::bad_alloc();
  }
  gunzip(const gunzip&) = delete;
  gunzip& operator=(const gunzip&) = delete;
  ~gunzip() { inflateEnd(&stream_); }

  const std::filesystem::path& file() const { return file_; }

  /// Decompresses up to n bytes into out; fewer only at the end of the data.
  std::size_t read(unsigned char* out, std::size_t n) {
    std::size_t produced = 0;
    while (produced < n) {
      if (member_ended_) {
        // Gzip allows several members one after the other; anything else after one is an error.
        if (position_ == compressed_.size()) break;
        if (!gzip_member_at(position_))
          bad_dataset_file(file_, std::to_string(compressed_.size() - position_) +
                                      " bytes that are not gzip data follow the gzip data.");
        if (inflateReset(&stream_) != Z_OK) throw std::bad_alloc();
        member_ended_ = false;
      }
      stream_.next_in = compressed_.data() + position_;
      stream_.avail_in = static_cast<uInt>(std::min<std::size_t>(compressed_.size() - position_, UINT_MAX));
      stream_.next_out = out + produced;
      const uInt room = static_cast<uInt>(std::min<std::size_t>(n - produced, UINT_MAX));
      stream_.avail_out = room;
      const uInt offered = stream_.avail_in;
      const int status = inflate(&stream_, Z_NO_FLUSH);
      position_ += offered - stream_.avail_in;
      produced += room - stream_.avail_out;
      if (status == Z_STREAM_END) {
        member_ended_ = true;
      } else if (status == Z_MEM_ERROR) {
        throw std::bad_alloc();
      } else if (status != Z_OK && status != Z_BUF_ERROR) {
        bad_dataset_file(file_, std::string("corrupt gzip data (zlib: ") + (stream_.msg ? stream_.msg : "error") + ").");
      } else if (stream_.avail_out != 0 && position_ == compressed_.size()) {
        bad_dataset_file(file_, "the gzip data is truncated (the file ends inside the compressed stream).");
      }
    }
    return produced;
  }
  /// Whether the decompressed data is exhausted.
  bool at_end() {
    unsigned char byte = 0;
    return read(&byte, 1) == 0;
  }

 private:
  bool gzip_member_at(std::size_t at) const {
    return compressed_.size() - at >= 2 && compressed_[at] == 0x1f && compressed_[at + 1] == 0x8b;
  }

  std::filesystem::path file_;
  std::vector<unsigned char> compressed_;
  std::size_t position_ = 0;
  z_stream stream_{};
  bool member_ended_ = false;
};

/// An IDX file of unsigned bytes: checks its magic number (0x0000080N: ubyte data, N dimensions)
/// and the extents after the first against `item_extents`; returns the payload, exactly
/// count * product(item_extents) bytes followed by nothing.
inline value_buffer<std::uint8_t> read_idx(gunzip& in, std::uint8_t dims, std::span<const std::size_t> item_extents,
                                           std::string_view what) {
  const auto& file = in.file();
  const std::size_t header_size = 4 * (1 + std::size_t{dims});
  std::array<unsigned char, 16> header{};
  const auto read_header = [&](std::size_t from, std::size_t to) {
    if (in.read(header.data() + from, to - from) != to - from)
      bad_dataset_file(file, "truncated: the data ends inside the " + std::to_string(header_size) + "-byte IDX header.");
  };
  read_header(0, 4);  // the magic number first: another kind of IDX file is reported as such
  const auto word = [&](std::size_t i) {
    return (std::uint32_t{header[4 * i]} << 24) | (std::uint32_t{header[4 * i + 1]} << 16) |
           (std::uint32_t{header[4 * i + 2]} << 8) | std::uint32_t{header[4 * i + 3]};
  };
  const std::uint32_t magic = word(0), expected_magic = 0x800u | dims;
  if (magic != expected_magic) {
    const auto hex = [](std::uint32_t v) {
      std::string text = "0x";
      for (int shift = 28; shift >= 0; shift -= 4) text += "0123456789abcdef"[(v >> shift) & 0xf];
      return text;
    };
    bad_dataset_file(file, "not an IDX file of " + std::string(what) + ": its magic number is " + hex(magic) +
                               ", expected " + hex(expected_magic) + ".");
  }
  read_header(4, header_size);
  std::size_t item_size = 1;
  for (std::size_t d = 0; d < item_extents.size(); ++d) {
    if (word(2 + d) != item_extents[d]) {
      std::string got, expected;
      for (std::size_t e = 0; e < item_extents.size(); ++e) {
        got += (e ? " x " : "") + std::to_string(word(2 + e));
        expected += (e ? " x " : "") + std::to_string(item_extents[e]);
      }
      bad_dataset_file(file, "the header gives " + std::string(what) + " of " + got + ", expected " + expected + ".");
    }
    item_size *= item_extents[d];
  }
  const std::size_t count = word(1);
  const std::size_t payload = checked_product(count, item_size, file);

  // Grow with the data that arrives (doubling from 1 MiB), never by the header's claim: deflate
  // expands up to 1032:1, so even the compressed size bounds nothing a machine can reserve.
  value_buffer<std::uint8_t> values;
  constexpr std::size_t chunk = std::size_t{1} << 20;
  while (values.size() < payload) {
    const std::size_t old = values.size(), want = std::min(payload - old, std::max(old, chunk));
    values.reserve(old + want);  // exact at the end (resize alone could leave a buffer 1.4x the data)
    values.resize(old + want);
    const std::size_t got = in.read(values.data() + old, want);
    if (got < want)
      bad_dataset_file(file, "truncated: the header announces " + std::to_string(count) + " " + std::string(what) + " (" +
                                 std::to_string(payload) + " bytes after the header), the data has " +
                                 std::to_string(old + got) + ".");
  }
  if (!in.at_end())
    bad_dataset_file(file, "trailing bytes after the " + std::to_string(count) + " " + std::string(what) +
                               " the header announces.");
  return values;
}

}  // namespace detail

namespace fashion_mnist {

/// Where Debian's dataset-fashion-mnist package puts the files.
inline const std::filesystem::path default_directory = "/usr/share/datasets/fashion-mnist";

/// The names of the 10 classes, by label.
inline constexpr std::array<std::string_view, 10> class_names = {
    "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"};

using Images = Tensor<std::uint8_t, dynamic, 28, 28>;
using Labels = Tensor<std::uint8_t, dynamic>;
using Data = Split<Images, Labels>;

/// One split: `prefix` is "train" (60000 images) or "t10k" (10000 images).
inline Data load_split(const std::filesystem::path& directory, std::string_view prefix) {
  const std::string hint =
      "Fashion-MNIST comes with Debian's dataset-fashion-mnist package: sudo apt-get install dataset-fashion-mnist "
      "(scripts/install-deps.sh installs it), or pass the directory that holds its four files to load_data(directory).";
  const std::filesystem::path images_file = directory / (std::string(prefix) + "-images-idx3-ubyte.gz");
  const std::filesystem::path labels_file = directory / (std::string(prefix) + "-labels-idx1-ubyte.gz");
  constexpr std::array<std::size_t, 2> image_extents{28, 28};
  value_buffer<std::uint8_t> images, labels;
  {
    detail::gunzip in(images_file, hint);
    images = detail::read_idx(in, 3, image_extents, "28 x 28 images");
  }
  {
    detail::gunzip in(labels_file, hint);
    labels = detail::read_idx(in, 1, {}, "labels");
  }
  const std::size_t n_images = images.size() / (28 * 28);
  if (n_images != labels.size())
    throw std::invalid_argument("Cannot load Fashion-MNIST from '" + mixprec::detail::quote_for_message(directory.string()) +
                                "': " + mixprec::detail::quote_for_message(images_file.string()) + " has " +
                                std::to_string(n_images) + " images but " +
                                mixprec::detail::quote_for_message(labels_file.string()) + " has " +
                                std::to_string(labels.size()) + " labels.");
  const auto bad = std::find_if(labels.begin(), labels.end(), [](std::uint8_t label) { return label >= 10; });
  if (bad != labels.end())
    detail::bad_dataset_file(labels_file, "label " + std::to_string(*bad) + " at index " +
                                              std::to_string(bad - labels.begin()) + " is not a class id in [0, 10).");
  return {Images(std::move(images)), Labels(std::move(labels))};
}

struct TrainTest {
  Data train, test;
};

/// Keras' fashion_mnist.load_data(): the 60000 training and 10000 test images (uint8, 28 x 28)
/// and labels (uint8, 0..9), from Debian's dataset-fashion-mnist (default_directory) or from
/// `directory`, which must hold train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz,
/// t10k-images-idx3-ubyte.gz and t10k-labels-idx1-ubyte.gz.
inline TrainTest load_data(const std::filesystem::path& directory = default_directory) {
  return {load_split(directory, "train"), load_split(directory, "t10k")};
}

}  // namespace fashion_mnist
}  // namespace mixprec::datasets
