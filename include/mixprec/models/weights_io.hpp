// Saving and loading weights, for compile-time and runtime models alike.
//
// File format (little-endian):
//   8 bytes   magic "MPXWGT01"
//   8 bytes   header length H (unsigned)
//   H bytes   JSON header: {"format": "mixprec-weights", "version": 1, "data_bytes": N,
//               "weights": [{"path": "dense/kernel", "dtype": "float32", "shape": [784, 10],
//                            "offset": 0, "bytes": 31360, "fnv1a64": "<hex>"}, ...],
//               "training": {...}, "training_fnv1a64": "<hex>"}
//             (checkpoints only: the optimizer's state, whose slots are weights under
//             "optimizer/", training/checkpoint.hpp; the checksum is of the section's compact
//             JSON with sorted keys)
// The file is written next to its destination and renamed over it: a crash while saving leaves
// the previous file whole.
//   N bytes   the weights' values, each in its dtype, row-major, at its offset
//
// Loading checks everything (magic, lengths, JSON, that every weight of the model is there
// once with its shape, sizes, checksums) before changing any weight: a truncated or corrupted
// file is a std::invalid_argument that names the problem, and leaves the model as it was.
// A weight saved in another floating dtype is converted (rounded once) to the model's.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include <mixprec/core/detail/file_chunks.hpp>
#include <mixprec/core/dtype.hpp>
#include <mixprec/core/limits.hpp>
#include <mixprec/kernels/convert.hpp>
#include <mixprec/layers/initializers.hpp>
#include <mixprec/layers/tensor.hpp>
#include <mixprec/runtime/detail/json_depth.hpp>
#include <mixprec/runtime/detail/message_text.hpp>

namespace mixprec {

static_assert(std::endian::native == std::endian::little,
              "mixprec's weight files are little-endian; this platform would need byte swapping.");

/// A weight seen through its bytes: what both model kinds hand to save/load.
struct weight_handle {
  std::string path;
  std::string_view dtype;
  std::vector<std::size_t> extents;
  std::span<const std::byte> bytes;
  /// Replaces the value from raw bytes in the given dtype (same number of elements; converted
  /// when the dtype differs). Called only after the whole file has been validated.
  std::function<void(std::string_view dtype, std::span<const std::byte>)> load;
};

namespace detail {

inline constexpr std::string_view weights_magic = "MPXWGT01";

inline std::string hex64(std::uint64_t value) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string text(16, '0');
  for (int i = 15; i >= 0; --i, value >>= 4) text[static_cast<std::size_t>(i)] = digits[value & 15];
  return text;
}

inline std::uint64_t fnv1a64(std::span<const std::byte> bytes) {
  std::uint64_t hash = 14695981039346656037ull;
  for (std::byte b : bytes) hash = (hash ^ static_cast<std::uint8_t>(b)) * 1099511628211ull;
  return hash;
}

inline std::size_t dtype_size(std::string_view dtype) {
  const auto index = find_dtype(dtype);
  if (!index) return 0;
  return with_dtype_at(*index, [](auto type) { return sizeof(typename decltype(type)::type); });
}

/// The checksum of a JSON value's compact text, keys sorted (as nlohmann::json keeps them).
template <class Deferred = void>
std::string json_checksum(const nlohmann::json& value) {
  const std::string text = value.dump();
  return hex64(fnv1a64(std::as_bytes(std::span(text))));
}

/// count values of T from a file's bytes in `dtype`: copied, or converted from another floating
/// dtype. Apart from loader's lambda, so that it is compiled once per T, not once per weight type.
template <class T>
std::vector<T> values_from_bytes(std::size_t count, std::string_view dtype, std::span<const std::byte> bytes) {
  std::vector<T> values(count);
  if (dtype == dtype_name_v<T>) {
    std::memcpy(values.data(), bytes.data(), count * sizeof(T));
  } else {
    with_dtype_at(*find_dtype(dtype), [&](auto type) {
      using From = typename decltype(type)::type;
      if constexpr (FloatingDType<From> && FloatingDType<T>) {
        std::vector<From> from(count);
        std::memcpy(from.data(), bytes.data(), count * sizeof(From));
        kernels::convert<From, T>(std::span<const From>(from), std::span(values));
      }
    });
  }
  return values;
}

/// `load` for a weight stored as a Tensor of T: the values from the file, handed to assign.
template <class T, class Assign>
std::function<void(std::string_view, std::span<const std::byte>)> loader(std::size_t count, Assign assign) {
  return [count, assign](std::string_view dtype, std::span<const std::byte> bytes) {
    assign(values_from_bytes<T>(count, dtype, bytes));
  };
}

[[noreturn]] inline void bad_weights_file(const std::string& file, const std::string& why) {
  throw std::invalid_argument("Cannot load weights from '" + quote_for_message(file) + "': " + why);
}

/// The member `key` of `object`, a part of the header that messages call `owner` ("the header",
/// "weight 'dense/kernel'"); one that is missing is an error.
template <class Deferred = void>
const nlohmann::json& header_member(const nlohmann::json& object, const char* key, const std::string& file,
                                    const std::string& owner) {
  const auto it = object.find(key);
  if (it == object.end()) bad_weights_file(file, owner + " has no \"" + key + "\".");
  return *it;
}

/// A member that must have the JSON type `type` (a string, an array, an object).
template <class Deferred = void>
const nlohmann::json& header_member(const nlohmann::json& object, const char* key, nlohmann::json::value_t type,
                                    const std::string& file, const std::string& owner) {
  const nlohmann::json& value = header_member(object, key, file, owner);
  if (value.type() != type)
    bad_weights_file(file, owner + ": \"" + key + "\" must be a JSON " + nlohmann::json(type).type_name() + "; it is " +
                               shown(value) + ".");
  return value;
}

/// A value that must be a non-negative integer written as one (not 0.5, -1 or 1e300).
template <class Deferred = void>
std::size_t header_count(const nlohmann::json& value, const std::string& file, const std::string& what) {
  if (!value.is_number_unsigned() || value.get<std::uint64_t>() > std::numeric_limits<std::size_t>::max())
    bad_weights_file(file, what + " must be a non-negative integer; it is " + shown(value) + ".");
  return value.get<std::size_t>();
}

template <class Deferred = void>
std::size_t header_count(const nlohmann::json& object, const char* key, const std::string& file,
                         const std::string& owner) {
  return header_count(header_member(object, key, file, owner), file, owner + ": \"" + key + "\"");
}

template <class Deferred = void>
const std::string& header_string(const nlohmann::json& object, const char* key, const std::string& file,
                                 const std::string& owner) {
  return header_member(object, key, nlohmann::json::value_t::string, file, owner).get_ref<const std::string&>();
}

}  // namespace detail

/// Writes the weights to `file` (replacing it); `training`, if not null, goes into the header.
template <class Deferred = void>
void save_weights(const std::vector<weight_handle>& weights, const std::string& file,
                  const nlohmann::ordered_json& training = nullptr) {
  nlohmann::ordered_json entries = nlohmann::ordered_json::array();
  std::size_t offset = 0;
  for (const auto& w : weights) {
    entries.push_back({{"path", w.path},
                       {"dtype", w.dtype},
                       {"shape", w.extents},
                       {"offset", offset},
                       {"bytes", w.bytes.size()},
                       {"fnv1a64", detail::hex64(detail::fnv1a64(w.bytes))}});
    offset += w.bytes.size();
  }
  nlohmann::ordered_json header = {{"format", "mixprec-weights"}, {"version", 1}, {"data_bytes", offset}, {"weights", entries}};
  std::string text;
  try {
    if (!training.is_null()) {
      header["training"] = training;
      header["training_fnv1a64"] = detail::json_checksum(nlohmann::json::parse(training.dump()));
    }
    text = header.dump();
  } catch (const nlohmann::json::type_error& error) {  // 316: a name that is not UTF-8 has no JSON text
    throw std::invalid_argument("Cannot save weights to '" + detail::quote_for_message(file) +
                                "': a weight path or a training setting is not valid UTF-8 (" + error.what() + ").");
  }
  const std::string partial = file + ".partial";
  std::ofstream out(partial, std::ios::binary | std::ios::trunc);
  if (!out)
    throw std::invalid_argument("Cannot save weights to '" + detail::quote_for_message(file) + "': cannot open '" +
                                detail::quote_for_message(partial) + "' for writing.");
  const std::uint64_t length = text.size();
  out.write(detail::weights_magic.data(), 8);
  out.write(reinterpret_cast<const char*>(&length), sizeof length);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  for (const auto& w : weights) out.write(reinterpret_cast<const char*>(w.bytes.data()), static_cast<std::streamsize>(w.bytes.size()));
  out.close();
  std::error_code error;
  const bool written = static_cast<bool>(out);
  if (!written || (std::filesystem::rename(partial, file, error), error)) {
    const std::string why = written ? "renaming '" + detail::quote_for_message(partial) + "' to it: " + error.message()
                                    : "writing '" + detail::quote_for_message(partial) + "' failed (is the disk full?)";
    std::filesystem::remove(partial, error);
    throw std::invalid_argument("Cannot save weights to '" + detail::quote_for_message(file) + "': " + why + ".");
  }
}

namespace detail {

/// The bytes of `file`, all or an error naming it: not a directory, counted against the
/// allocation cap as they are read (a pipe or a device has no size to check first; a regular
/// file over the cap is refused before reading), and a read error is bad_weights_file too.
inline std::vector<char> read_weights_file(const std::string& file) {
  const auto over_cap = [&](std::uintmax_t bytes) {
    try {
      check_allocation("the file", static_cast<std::size_t>(std::min<std::uintmax_t>(bytes, SIZE_MAX)), 1);
    } catch (const std::invalid_argument& cap) {
      bad_weights_file(file, cap.what());
    }
  };
  std::vector<char> content;
  std::error_code error;
  if (const std::uintmax_t bytes = std::filesystem::file_size(file, error); !error) {
    over_cap(bytes);
    content.reserve(static_cast<std::size_t>(bytes));
  }
  read_file_chunks(
      file,
      [&](const char* data, std::size_t count) {
        const std::size_t needed = content.size() + count;
        over_cap(needed);
        if (needed > content.capacity())  // grown by hand: doubling could pass the cap
          content.reserve(std::min(std::max(needed, 2 * content.capacity()), get_size_limits().max_allocation_bytes));
        content.insert(content.end(), data, data + count);
      },
      [&](const std::string& why) { bad_weights_file(file, why); });
  return content;
}

}  // namespace detail

/// What a checkpoint's loader makes of the header's "training" section: it checks it (throwing
/// std::invalid_argument), names the further weights to load (the optimizer's slots), and what
/// to do once every weight is in.
struct training_state {
  std::vector<weight_handle> weights;
  std::function<void()> finish;
};
using training_state_loader = std::function<training_state(const nlohmann::json& training)>;

/// Reads `file` into the weights; all or nothing (see the format above). Without a
/// training_state_loader, a checkpoint's optimizer state is skipped (its weights load alone).
template <class Deferred = void>
void load_weights(std::vector<weight_handle> weights, const std::string& file,
                  const training_state_loader& load_training = nullptr) {
  const std::vector<char> content = detail::read_weights_file(file);
  if (content.size() < 16 || std::string_view(content.data(), 8) != detail::weights_magic)
    detail::bad_weights_file(file, "it is not a mixprec weights file (bad magic or shorter than 16 bytes).");
  std::uint64_t header_length;
  std::memcpy(&header_length, content.data() + 8, sizeof header_length);
  if (header_length > content.size() - 16)
    detail::bad_weights_file(file, "the header length (" + std::to_string(header_length) +
                                       ") runs past the end of the file: it is truncated.");
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(content.begin() + 16, content.begin() + 16 + static_cast<std::ptrdiff_t>(header_length));
  } catch (const nlohmann::json::exception& error) {
    detail::bad_weights_file(file, "its JSON header does not parse: " + detail::quote_for_message(error.what()));
  }
  detail::check_json_depth(header, "Cannot load weights from '" + detail::quote_for_message(file) + "': its header");
  if (!header.is_object()) detail::bad_weights_file(file, "its header is not a JSON object.");
  const std::span<const std::byte> data(reinterpret_cast<const std::byte*>(content.data()) + 16 + header_length,
                                        content.size() - 16 - header_length);
  using value_t = nlohmann::json::value_t;
  const std::string top = "the header";
  if (detail::header_member(header, "format", file, top) != "mixprec-weights")
    detail::bad_weights_file(file, "unknown format " + detail::shown(header["format"]) + " (expected \"mixprec-weights\").");
  if (const std::size_t version = detail::header_count(header, "version", file, top); version != 1)
    detail::bad_weights_file(file, "unknown version " + std::to_string(version) + " (this mixprec reads version 1).");
  const std::size_t data_bytes = detail::header_count(header, "data_bytes", file, top);
  if (data_bytes != data.size())
    detail::bad_weights_file(file, "the header announces " + std::to_string(data_bytes) + " bytes of values but " +
                                       std::to_string(data.size()) + " follow: it is truncated or has trailing bytes.");
  struct entry {
    std::string dtype;
    std::vector<std::size_t> shape;
    std::span<const std::byte> bytes;
  };
  std::map<std::string, entry> entries;
  const nlohmann::json& listed = detail::header_member(header, "weights", value_t::array, file, top);
  for (std::size_t i = 0; i < listed.size(); ++i) {
    const nlohmann::json& item = listed[i];
    if (!item.is_object())
      detail::bad_weights_file(file, "weights[" + std::to_string(i) + "] must be a JSON object; it is " +
                                         detail::shown(item) + ".");
    const std::string& path = detail::header_string(item, "path", file, "weights[" + std::to_string(i) + "]");
    const std::string owner = "weight '" + detail::quote_for_message(path) + "'";
    entry e{detail::header_string(item, "dtype", file, owner), {}, {}};
    std::size_t elements = 1;
    bool overflow = false;
    for (const auto& extent : detail::header_member(item, "shape", value_t::array, file, owner)) {
      e.shape.push_back(detail::header_count(extent, file, owner + ": an extent in \"shape\""));
      overflow = __builtin_mul_overflow(elements, e.shape.back(), &elements) || overflow;
    }
    const std::size_t offset = detail::header_count(item, "offset", file, owner);
    const std::size_t bytes = detail::header_count(item, "bytes", file, owner);
    const std::string& checksum = detail::header_string(item, "fnv1a64", file, owner);
    const std::size_t element_size = detail::dtype_size(e.dtype);
    if (element_size == 0)
      detail::bad_weights_file(file, owner + " has an unknown dtype '" + detail::quote_for_message(e.dtype) + "'.");
    std::size_t expected_bytes = 0;
    overflow = __builtin_mul_overflow(elements, element_size, &expected_bytes) || overflow;
    if (overflow || bytes != expected_bytes || offset > data.size() || bytes > data.size() - offset)
      detail::bad_weights_file(file, owner + " has inconsistent sizes (offset " + std::to_string(offset) + ", " +
                                         std::to_string(bytes) + " bytes for " + std::to_string(elements) + " x " +
                                         e.dtype + ").");
    e.bytes = data.subspan(offset, bytes);
    if (detail::hex64(detail::fnv1a64(e.bytes)) != checksum)
      detail::bad_weights_file(file, "the values of " + owner + " are corrupted (checksum mismatch).");
    if (!entries.emplace(path, std::move(e)).second) detail::bad_weights_file(file, owner + " appears twice.");
  }
  std::function<void()> finish_training;
  if (header.contains("training")) {
    if (!header["training"].is_object())
      detail::bad_weights_file(file, "its training state is corrupted (\"training\" is not a JSON object).");
    if (!header.contains("training_fnv1a64"))
      detail::bad_weights_file(file, "its training state is corrupted (no \"training_fnv1a64\" checksum).");
    if (header["training_fnv1a64"] != detail::json_checksum(header["training"]))
      detail::bad_weights_file(file, "its training state is corrupted (checksum mismatch).");
  }
  if (load_training) {
    if (!header.contains("training"))
      detail::bad_weights_file(file, "it holds weights only, not a training checkpoint (no optimizer state).");
    try {
      training_state state = load_training(header["training"]);
      weights.insert(weights.end(), state.weights.begin(), state.weights.end());
      finish_training = std::move(state.finish);
    } catch (const std::invalid_argument& error) {
      detail::bad_weights_file(file, error.what());
    } catch (const nlohmann::json::exception& error) {
      detail::bad_weights_file(file, "its training state is malformed: " + detail::quote_for_message(error.what()));
    }
  } else if (header.contains("training")) {
    // A checkpoint read as weights: its optimizer slots are not the model's.
    std::erase_if(entries, [&](const auto& entry) {
      return entry.first.starts_with("optimizer/") &&
             std::none_of(weights.begin(), weights.end(), [&](const weight_handle& w) { return w.path == entry.first; });
    });
  }
  std::vector<std::string> missing;
  for (const auto& w : weights) {
    const auto it = entries.find(w.path);
    if (it == entries.end()) {
      missing.push_back(w.path);
      continue;
    }
    if (it->second.shape != w.extents)
      detail::bad_weights_file(file, "weight '" + detail::quote_for_message(w.path) + "' has shape " +
                                         nlohmann::json(it->second.shape).dump() + " in the file but " +
                                         nlohmann::json(w.extents).dump() + " in the model.");
    const auto floating = [](std::string_view dtype) {
      return with_dtype_at(*find_dtype(dtype), [](auto type) { return FloatingDType<typename decltype(type)::type>; });
    };
    // Floating values convert to the model's floating dtype; an int8 kernel loads only from int8.
    if (it->second.dtype != w.dtype && !(floating(it->second.dtype) && floating(w.dtype)))
      detail::bad_weights_file(file, "weight '" + detail::quote_for_message(w.path) + "' is " + it->second.dtype +
                                         " in the file but " + std::string(w.dtype) + " in the model.");
  }
  if (!missing.empty())
    detail::bad_weights_file(file, "it lacks " + detail::shown(nlohmann::json(missing)) + " (a different model?).");
  if (entries.size() != weights.size()) {
    std::vector<std::string> unexpected;
    for (const auto& [path, e] : entries) {
      bool known = false;
      for (const auto& w : weights) known = known || w.path == path;
      if (!known) unexpected.push_back(path);
    }
    detail::bad_weights_file(file, "it has weights the model does not: " + detail::shown(nlohmann::json(unexpected)) + ".");
  }
  for (const auto& w : weights) {
    const auto& e = entries.at(w.path);
    w.load(e.dtype, e.bytes);
  }
  if (finish_training) finish_training();
}

/// A handle on a compile-time model's weight (a Tensor-backed AutoCastVariable).
template <class Weight>
weight_handle handle_of(std::string path, Weight& weight) {
  using V = typename Weight::true_dtype;
  const auto& value = weight.value();
  return {std::move(path), dtype_name_v<V>, weight.shape(), std::as_bytes(value.values()),
          detail::loader<V>(value.size(), [&weight](std::vector<V> values) {
            weight.reset(typename Weight::value_type(std::move(values)));
          })};
}

}  // namespace mixprec
