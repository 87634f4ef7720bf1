// datasets::fashion_mnist::load_data(): the real files of Debian's dataset-fashion-mnist, and
// small gzip files written here for every error of the IDX / gzip reader.
#include <doctest/doctest.h>

#include <zlib.h>

#include <array>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <mixprec/datasets.hpp>

using namespace mixprec;
namespace fashion_mnist = datasets::fashion_mnist;
using bytes = std::vector<unsigned char>;

namespace {

/// A fresh directory under the system's temporary directory, removed at the end.
struct temp_dir {
  std::filesystem::path path;
  temp_dir() {
    std::random_device random;
    path = std::filesystem::temp_directory_path() / ("mixprec_test_datasets_" + std::to_string(random()));
    std::filesystem::create_directories(path);
  }
  ~temp_dir() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
};

void append_u32(bytes& out, std::uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<unsigned char>(v >> shift));
}

/// An IDX images file: header (magic, count, rows, columns) and the pixels i * 7 + k (mod 256).
bytes idx_images(std::uint32_t count, std::uint32_t rows = 28, std::uint32_t columns = 28, std::uint32_t magic = 0x803,
                 std::size_t actual_count = static_cast<std::size_t>(-1)) {
  bytes out;
  append_u32(out, magic);
  append_u32(out, count);
  append_u32(out, rows);
  append_u32(out, columns);
  const std::size_t n = actual_count == static_cast<std::size_t>(-1) ? count : actual_count;
  for (std::size_t i = 0; i < n * rows * columns; ++i) out.push_back(static_cast<unsigned char>(i * 7 % 256));
  return out;
}

bytes idx_labels(const std::vector<unsigned char>& labels, std::uint32_t magic = 0x801) {
  bytes out;
  append_u32(out, magic);
  append_u32(out, static_cast<std::uint32_t>(labels.size()));
  out.insert(out.end(), labels.begin(), labels.end());
  return out;
}

bytes gzip(const bytes& data) {
  uLongf size = compressBound(static_cast<uLong>(data.size())) + 64;
  bytes out(size);
  z_stream s{};
  REQUIRE(deflateInit2(&s, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) == Z_OK);
  s.next_in = const_cast<unsigned char*>(data.data());
  s.avail_in = static_cast<uInt>(data.size());
  s.next_out = out.data();
  s.avail_out = static_cast<uInt>(out.size());
  REQUIRE(deflate(&s, Z_FINISH) == Z_STREAM_END);
  out.resize(s.total_out);
  deflateEnd(&s);
  return out;
}

void write_file(const std::filesystem::path& file, const bytes& data) {
  std::ofstream out(file, std::ios::binary);
  out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
  REQUIRE(out.good());
}

/// A directory with a valid 3-image training split and 2-image test split; each file can be
/// replaced (already compressed, or not) afterwards.
struct synthetic_set : temp_dir {
  synthetic_set() {
    put("train-images-idx3-ubyte.gz", gzip(idx_images(3)));
    put("train-labels-idx1-ubyte.gz", gzip(idx_labels({9, 0, 3})));
    put("t10k-images-idx3-ubyte.gz", gzip(idx_images(2)));
    put("t10k-labels-idx1-ubyte.gz", gzip(idx_labels({2, 1})));
  }
  std::filesystem::path put(const std::string& name, const bytes& data) {
    write_file(path / name, data);
    return path / name;
  }
};

/// The message load_data(directory) fails with ("" if it does not fail).
std::string load_error(const std::filesystem::path& directory) {
  try {
    (void)fashion_mnist::load_data(directory);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("load_data reads Debian's dataset-fashion-mnist") {
  const auto& dir = fashion_mnist::default_directory;
  if (!std::filesystem::exists(dir / "train-images-idx3-ubyte.gz")) {
    MESSAGE("skipped: " << dir.string() << " is missing (sudo apt-get install dataset-fashion-mnist)");
    return;
  }
  auto [train, test] = fashion_mnist::load_data();
  REQUIRE(train.size() == 60000);
  REQUIRE(test.size() == 10000);
  CHECK(train.x.extents() == std::array<std::size_t, 3>{60000, 28, 28});
  CHECK(test.x.extents() == std::array<std::size_t, 3>{10000, 28, 28});
  CHECK(train.y.extents() == std::array<std::size_t, 1>{60000});

  // The first labels and pixel sums, read once from the files with Python's gzip module.
  const std::vector<std::uint8_t> first_train{9, 0, 0, 3, 0, 2, 7, 2, 5, 5}, first_test{9, 2, 1, 1, 6, 1, 4, 6, 5, 7};
  CHECK(std::vector<std::uint8_t>(train.y.values().begin(), train.y.values().begin() + 10) == first_train);
  CHECK(std::vector<std::uint8_t>(test.y.values().begin(), test.y.values().begin() + 10) == first_test);
  CHECK(fashion_mnist::class_names[train.y[0]] == "Ankle boot");
  const auto sum = [](auto values) { return std::accumulate(values.begin(), values.end(), std::uint64_t{0}); };
  CHECK(sum(train.x.row(0)) == 76247);
  CHECK(sum(test.x.row(0)) == 33456);
  CHECK(sum(train.x.values()) == 3431114169u);
  CHECK(sum(test.x.values()) == 573469082u);

  std::array<std::size_t, 10> train_counts{}, test_counts{};
  for (auto label : train.y.values()) ++train_counts.at(label);
  for (auto label : test.y.values()) ++test_counts.at(label);
  for (std::size_t c = 0; c < 10; ++c) {
    CAPTURE(c);
    CHECK(train_counts[c] == 6000);
    CHECK(test_counts[c] == 1000);
  }

  const Tensor<float, dynamic, 784> flat = datasets::scaled<784>(test.x);
  CHECK(flat.batch() == 10000);
  CHECK(flat[200] == static_cast<float>(test.x[200]) / 255.0f);
  double scaled_sum = 0.0;
  for (float v : flat.row(0)) scaled_sum += v;
  CHECK(scaled_sum == doctest::Approx(33456.0 / 255.0));
}

TEST_CASE("load_data reads a directory given to it; scaled<> reshapes to float32 in [0, 1]") {
  synthetic_set set;
  auto [train, test] = fashion_mnist::load_data(set.path);
  REQUIRE(train.size() == 3);
  REQUIRE(test.size() == 2);
  const bytes expected = idx_images(3);
  CHECK(std::equal(train.x.values().begin(), train.x.values().end(), expected.begin() + 16, expected.end()));
  CHECK(train.y == fashion_mnist::Labels({9, 0, 3}));
  CHECK(test.y == fashion_mnist::Labels({2, 1}));
  auto [x, y] = test;  // a split unpacks like Keras' (x_test, y_test)
  CHECK(y.batch() == 2);

  const Tensor<float, dynamic, 28, 28, 1> images = datasets::scaled<28, 28, 1>(x);
  REQUIRE(images.batch() == 2);
  for (std::size_t i = 0; i < images.size(); ++i) {
    CHECK(images[i] == static_cast<float>(x[i]) / 255.0f);
    CHECK((images[i] >= 0.0f && images[i] <= 1.0f));
  }
  CHECK(datasets::scaled<784>(x).values().size() == 2 * 784);

  // Gzip allows several members in one file; the reader takes them all.
  bytes labels = idx_labels({2, 1});
  bytes two_members = gzip(bytes(labels.begin(), labels.begin() + 5));
  const bytes second = gzip(bytes(labels.begin() + 5, labels.end()));
  two_members.insert(two_members.end(), second.begin(), second.end());
  set.put("t10k-labels-idx1-ubyte.gz", two_members);
  CHECK(fashion_mnist::load_data(set.path).test.y == fashion_mnist::Labels({2, 1}));
}

TEST_CASE("load_data: a missing file names the path and the package") {
  temp_dir empty;
  const std::string error = load_error(empty.path / "nowhere");
  CHECK(has(error, (empty.path / "nowhere" / "train-images-idx3-ubyte.gz").string()));
  CHECK(has(error, "no such file"));
  CHECK(has(error, "sudo apt-get install dataset-fashion-mnist"));
  CHECK(has(error, "scripts/install-deps.sh"));

  synthetic_set set;
  std::filesystem::remove(set.path / "t10k-labels-idx1-ubyte.gz");
  CHECK(has(load_error(set.path), (set.path / "t10k-labels-idx1-ubyte.gz").string() + "': no such file"));
}

TEST_CASE("load_data: each malformed file is an error naming the file and the problem") {
  const auto expect_error = [&](const std::string& name, const bytes& contents, const std::string& problem) {
    CAPTURE(name);
    CAPTURE(problem);
    synthetic_set fresh;
    const auto file = fresh.put(name, contents);
    const std::string error = load_error(fresh.path);
    CAPTURE(error);
    CHECK(has(error, "Cannot load '" + file.string() + "': "));
    CHECK(has(error, problem));
  };
  const bytes images = idx_images(3);
  bytes gz = gzip(images);

  expect_error("train-images-idx3-ubyte.gz", images, "not a gzip file");
  expect_error("train-images-idx3-ubyte.gz", {}, "not a gzip file");
  expect_error("train-images-idx3-ubyte.gz", {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 0xff, 0xff, 0xff, 0xff, 0xff},
               "corrupt gzip data");
  expect_error("train-images-idx3-ubyte.gz", bytes(gz.begin(), gz.end() - 20), "the gzip data is truncated");
  bytes garbage_after = gz;
  garbage_after.insert(garbage_after.end(), {'h', 'i'});
  expect_error("train-images-idx3-ubyte.gz", garbage_after, "2 bytes that are not gzip data follow the gzip data");

  expect_error("train-images-idx3-ubyte.gz", gzip(idx_labels({1, 2, 3})), "magic number is 0x00000801, expected 0x00000803");
  expect_error("train-labels-idx1-ubyte.gz", gzip(idx_images(3)), "magic number is 0x00000803, expected 0x00000801");
  expect_error("train-images-idx3-ubyte.gz", gzip(idx_images(3, 28, 28, 0x08030000)), "magic number is 0x08030000");
  expect_error("train-images-idx3-ubyte.gz", gzip(idx_images(3, 32, 32)), "of 32 x 32, expected 28 x 28");
  expect_error("train-images-idx3-ubyte.gz", gzip(idx_images(3, 28, 27)), "of 28 x 27, expected 28 x 28");
  expect_error("train-images-idx3-ubyte.gz", gzip(bytes(images.begin(), images.begin() + 10)),
               "the data ends inside the 16-byte IDX header");
  expect_error("train-labels-idx1-ubyte.gz", gzip({0, 0, 8, 1}), "the data ends inside the 8-byte IDX header");
  expect_error("train-labels-idx1-ubyte.gz", gzip({0, 0, 8}), "the data ends inside the 8-byte IDX header");
  expect_error("train-images-idx3-ubyte.gz", gzip(bytes(images.begin(), images.end() - 1)),
               "truncated: the header announces 3 28 x 28 images (2352 bytes after the header), the data has 2351");
  bytes trailing = images;
  trailing.push_back(0);
  expect_error("train-images-idx3-ubyte.gz", gzip(trailing), "trailing bytes after the 3 28 x 28 images");
  bytes labels = idx_labels({9, 0, 3});
  labels.push_back(1);
  expect_error("train-labels-idx1-ubyte.gz", gzip(labels), "trailing bytes after the 3 labels");
  expect_error("train-labels-idx1-ubyte.gz", gzip(idx_labels({9, 10, 3})), "label 10 at index 1 is not a class id in [0, 10)");
  expect_error("t10k-labels-idx1-ubyte.gz", gzip(idx_labels({1, 255})), "label 255 at index 1");

  // A header that claims 2^32 - 1 images over a few bytes of data: an error about the data, not
  // an allocation of 3.4 TB (or an overflow).
  expect_error("train-images-idx3-ubyte.gz", gzip(idx_images(0xffffffffu, 28, 28, 0x803, 2)),
               "truncated: the header announces 4294967295 28 x 28 images (3367254359280 bytes after the header), "
               "the data has 1568");
  bytes huge_labels = idx_labels({1, 2});
  huge_labels[4] = huge_labels[5] = huge_labels[6] = huge_labels[7] = 0xff;
  expect_error("train-labels-idx1-ubyte.gz", gzip(huge_labels), "the header announces 4294967295 labels");
  // The same claim over a megabyte of real data: memory grows with the data, not by what deflate
  // could expand the file to (1032:1, gigabytes for a few megabytes).
  expect_error("train-images-idx3-ubyte.gz", gzip(idx_images(0xffffffffu, 28, 28, 0x803, 2000)),
               "the data has 1568000");

  // A directory where a file should be (std::ifstream would open it on Linux) is an error naming it.
  synthetic_set fresh;
  const std::filesystem::path labels_file = fresh.path / "t10k-labels-idx1-ubyte.gz";
  std::filesystem::remove(labels_file);
  std::filesystem::create_directory(labels_file);
  CHECK(load_error(fresh.path) == "Cannot load '" + labels_file.string() + "': it is a directory.");
}

TEST_CASE("load_data: image and label counts must agree") {
  synthetic_set set;
  const auto labels = set.put("train-labels-idx1-ubyte.gz", gzip(idx_labels({1, 2})));
  const std::string error = load_error(set.path);
  CHECK(has(error, (set.path / "train-images-idx3-ubyte.gz").string() + " has 3 images but " + labels.string() +
                       " has 2 labels"));
  set.put("train-labels-idx1-ubyte.gz", gzip(idx_labels({1, 2, 3})));
  set.put("t10k-images-idx3-ubyte.gz", gzip(idx_images(0)));
  CHECK(has(load_error(set.path), "has 0 images but"));
}
