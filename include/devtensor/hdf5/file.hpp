#pragma once
/// @file file.hpp
/// @brief A small RAII layer over the HDF5 C library: files, groups, string attributes and
/// datasets of float32 / int64 arrays, with HDF5's failures turned into devtensor's typed errors.
///
/// Only what Keras's weights files use. Every handle closes itself; HDF5's own error printing is
/// silenced while a call runs (the failure becomes an exception that says what was being done).
/// Needs the devtensor::hdf5 CMake component (the HDF5 C library: Debian's libhdf5-dev).

#include <hdf5.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "devtensor/core/error.hpp"

namespace devtensor::hdf5 {

/// HDF5's automatic error printing, off while alive (the caller reports failures itself).
class QuietErrors {
 public:
  QuietErrors() noexcept {
    H5Eget_auto2(H5E_DEFAULT, &function_, &data_);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  }
  ~QuietErrors() { H5Eset_auto2(H5E_DEFAULT, function_, data_); }
  QuietErrors(const QuietErrors&) = delete;
  QuietErrors& operator=(const QuietErrors&) = delete;

 private:
  H5E_auto2_t function_ = nullptr;
  void* data_ = nullptr;
};

/// An open HDF5 object (file, group, dataset, attribute, type or space), closed by `close`.
class Handle {
 public:
  Handle() = default;
  Handle(hid_t id, herr_t (*close)(hid_t)) noexcept : id_(id), close_(close) {}
  Handle(Handle&& other) noexcept : id_(std::exchange(other.id_, H5I_INVALID_HID)), close_(other.close_) {}
  Handle& operator=(Handle&& other) noexcept {
    if (this != &other) {
      reset();
      id_ = std::exchange(other.id_, H5I_INVALID_HID);
      close_ = other.close_;
    }
    return *this;
  }
  ~Handle() { reset(); }
  [[nodiscard]] hid_t id() const noexcept { return id_; }
  [[nodiscard]] bool valid() const noexcept { return id_ >= 0; }

 private:
  hid_t id_ = H5I_INVALID_HID;
  herr_t (*close_)(hid_t) = nullptr;
  void reset() noexcept {
    if (id_ >= 0 && close_) close_(id_);
    id_ = H5I_INVALID_HID;
  }
};

/// `id` as a Handle; a negative id (HDF5's failure) throws `Error` with `what`.
template <class Error = InvalidArgumentError>
Handle checked(hid_t id, herr_t (*close)(hid_t), const std::string& what) {
  if (id < 0) throw Error(what);
  return Handle(id, close);
}
inline void check(herr_t status, const std::string& what) {
  if (status < 0) throw InternalError("HDF5: " + what + " failed");
}

/// A group (or a file's root group): children by name, string attributes, datasets.
class Group {
 public:
  explicit Group(Handle handle, std::string path) : handle_(std::move(handle)), path_(std::move(path)) {}
  [[nodiscard]] const std::string& path() const noexcept { return path_; }
  [[nodiscard]] hid_t id() const noexcept { return handle_.id(); }

  [[nodiscard]] bool has(const std::string& name) const {
    const QuietErrors quiet;
    return H5Lexists(id(), name.c_str(), H5P_DEFAULT) > 0;
  }
  /// The object's type (H5O_TYPE_GROUP, H5O_TYPE_DATASET), H5O_TYPE_UNKNOWN when absent.
  [[nodiscard]] H5O_type_t type_of(const std::string& name) const;
  /// The names of its children, in name order.
  [[nodiscard]] std::vector<std::string> children() const;

  Group create_group(const std::string& name) {
    return Group(checked<InternalError>(H5Gcreate2(id(), name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose,
                                        "HDF5: cannot create group " + child_path(name)),
                 child_path(name));
  }
  /// @throws InvalidArgumentError when there is no such group.
  [[nodiscard]] Group group(const std::string& name) const {
    if (type_of(name) != H5O_TYPE_GROUP) throw InvalidArgumentError("no group " + child_path(name) + " in the file");
    const QuietErrors quiet;
    return Group(checked(H5Gopen2(id(), name.c_str(), H5P_DEFAULT), H5Gclose, "cannot open group " + child_path(name)),
                 child_path(name));
  }

  /// A variable-length UTF-8 string attribute (what h5py writes for a Python str).
  void set_string_attribute(const std::string& name, const std::string& value);
  /// @throws InvalidArgumentError when absent or not a string.
  [[nodiscard]] std::string string_attribute(const std::string& name) const;

  /// Writes a float32 dataset of `shape` (a scalar for an empty shape) from `values`.
  void write_floats(const std::string& name, const std::vector<std::int64_t>& shape, const std::vector<float>& values);
  /// A float32 dataset's shape and values. @throws InvalidArgumentError when it is absent or of
  /// another type, or holds more than `max_elements` values (checked before anything is allocated:
  /// a damaged or hostile file may declare any shape).
  [[nodiscard]] std::pair<std::vector<std::int64_t>, std::vector<float>> read_floats(
      const std::string& name, std::uint64_t max_elements = std::uint64_t{1} << 34) const;
  /// A dataset's shape, read without its values. @throws InvalidArgumentError when it is absent.
  [[nodiscard]] std::vector<std::int64_t> dataset_shape(const std::string& name) const;

  /// A scalar int64 dataset (Keras's optimizer iterations).
  void write_int64(const std::string& name, std::int64_t value);
  /// @throws InvalidArgumentError when it is absent or not a scalar integer.
  [[nodiscard]] std::int64_t read_int64(const std::string& name) const;

  [[nodiscard]] std::string child_path(const std::string& name) const {
    return path_ == "/" ? "/" + name : path_ + "/" + name;
  }

 private:
  Handle handle_;
  std::string path_;
};

/// Creates (truncating) an HDF5 file. @throws InvalidArgumentError when it cannot be written.
[[nodiscard]] Group create_file(const std::filesystem::path& path);
/// An HDF5 file in memory only (HDF5's core driver, no backing file): a weights file to put in an
/// archive. Its bytes: file_image.
[[nodiscard]] Group create_in_memory();
/// The bytes of the file `root` is the root of (flushed first).
[[nodiscard]] std::vector<unsigned char> file_image(const Group& root);
/// Opens, read-only, an HDF5 file held in memory. `what` names it in errors. HDF5 copies the bytes
/// (twice: the property list's copy, then the file's), unless `borrow`: then the file reads them
/// where they are, and they must outlive every handle into it (a loader that reads a 100 MB
/// archive's weights saves two copies). @throws InvalidArgumentError when the bytes are not a
/// readable HDF5 file.
[[nodiscard]] Group open_image(const std::vector<unsigned char>& bytes, const std::string& what, bool borrow = false);
/// Opens an HDF5 file for reading. @throws NotFoundError when it does not exist,
/// InvalidArgumentError when it is not a readable HDF5 file (truncated, or another format).
[[nodiscard]] Group open_file(const std::filesystem::path& path);

// ---------------------------------------------------------------------------------------------
// Definitions: only programs that use the component include this header, so they are inline.

inline H5O_type_t Group::type_of(const std::string& name) const {
  if (!has(name)) return H5O_TYPE_UNKNOWN;
  const QuietErrors quiet;
  H5O_info_t info;
  if (H5Oget_info_by_name(id(), name.c_str(), &info, H5P_DEFAULT) < 0) return H5O_TYPE_UNKNOWN;
  return info.type;
}

inline std::vector<std::string> Group::children() const {
  std::vector<std::string> names;
  const auto collect = [](hid_t, const char* name, const H5L_info_t*, void* out) -> herr_t {
    static_cast<std::vector<std::string>*>(out)->emplace_back(name);
    return 0;
  };
  const QuietErrors quiet;
  if (H5Literate(id(), H5_INDEX_NAME, H5_ITER_INC, nullptr, collect, &names) < 0)
    throw InvalidArgumentError("cannot list the group " + path_ + " of the file");
  return names;
}

inline void Group::set_string_attribute(const std::string& name, const std::string& value) {
  const Handle type = checked<InternalError>(H5Tcopy(H5T_C_S1), H5Tclose, "HDF5: cannot make a string type");
  check(H5Tset_size(type.id(), H5T_VARIABLE), "setting a string type's size");
  check(H5Tset_cset(type.id(), H5T_CSET_UTF8), "setting a string type's character set");
  const Handle space = checked<InternalError>(H5Screate(H5S_SCALAR), H5Sclose, "HDF5: cannot make a scalar space");
  const Handle attribute =
      checked<InternalError>(H5Acreate2(id(), name.c_str(), type.id(), space.id(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose,
                             "HDF5: cannot create attribute " + name + " of " + path_);
  const char* text = value.c_str();
  check(H5Awrite(attribute.id(), type.id(), &text), "writing attribute " + name + " of " + path_);
}

inline std::string Group::string_attribute(const std::string& name) const {
  const QuietErrors quiet;
  if (H5Aexists(id(), name.c_str()) <= 0) throw InvalidArgumentError("no attribute '" + name + "' on " + path_);
  const Handle attribute = checked(H5Aopen(id(), name.c_str(), H5P_DEFAULT), H5Aclose, "cannot open attribute " + name);
  const Handle stored = checked(H5Aget_type(attribute.id()), H5Tclose, "cannot read attribute " + name);
  if (H5Tget_class(stored.id()) != H5T_STRING)
    throw InvalidArgumentError("attribute '" + name + "' of " + path_ + " is not a string");
  if (H5Tis_variable_str(stored.id()) > 0) {
    const Handle type = checked<InternalError>(H5Tcopy(H5T_C_S1), H5Tclose, "HDF5: cannot make a string type");
    check(H5Tset_size(type.id(), H5T_VARIABLE), "setting a string type's size");
    check(H5Tset_cset(type.id(), H5Tget_cset(stored.id())), "setting a string type's character set");
    char* text = nullptr;
    if (H5Aread(attribute.id(), type.id(), &text) < 0 || text == nullptr)
      throw InvalidArgumentError("cannot read attribute '" + name + "' of " + path_);
    std::string out(text);
    H5free_memory(text);
    return out;
  }
  std::string out(H5Tget_size(stored.id()), '\0');  // a fixed-length string
  if (H5Aread(attribute.id(), stored.id(), out.data()) < 0)
    throw InvalidArgumentError("cannot read attribute '" + name + "'");
  return out.substr(0, out.find('\0'));
}

inline void Group::write_floats(const std::string& name, const std::vector<std::int64_t>& shape,
                                const std::vector<float>& values) {
  std::vector<hsize_t> dims(shape.begin(), shape.end());
  const Handle space = checked<InternalError>(
      dims.empty() ? H5Screate(H5S_SCALAR) : H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr),
      H5Sclose, "HDF5: cannot make a dataspace for " + child_path(name));
  const Handle dataset = checked<InternalError>(
      H5Dcreate2(id(), name.c_str(), H5T_IEEE_F32LE, space.id(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Dclose,
      "HDF5: cannot create dataset " + child_path(name));
  if (!values.empty())
    check(H5Dwrite(dataset.id(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()),
          "writing " + child_path(name));
}

inline std::vector<std::int64_t> Group::dataset_shape(const std::string& name) const {
  if (type_of(name) != H5O_TYPE_DATASET) throw InvalidArgumentError("no dataset " + child_path(name) + " in the file");
  const QuietErrors quiet;
  const Handle dataset =
      checked(H5Dopen2(id(), name.c_str(), H5P_DEFAULT), H5Dclose, "cannot open " + child_path(name));
  const Handle space = checked(H5Dget_space(dataset.id()), H5Sclose, "cannot read the shape of " + child_path(name));
  const int rank = H5Sget_simple_extent_ndims(space.id());
  if (rank < 0 || rank > H5S_MAX_RANK) throw InvalidArgumentError("cannot read the shape of " + child_path(name));
  std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
  if (rank > 0 && H5Sget_simple_extent_dims(space.id(), dims.data(), nullptr) < 0)
    throw InvalidArgumentError("cannot read the shape of " + child_path(name));
  return {dims.begin(), dims.end()};
}

inline std::pair<std::vector<std::int64_t>, std::vector<float>> Group::read_floats(const std::string& name,
                                                                                   std::uint64_t max_elements) const {
  if (type_of(name) != H5O_TYPE_DATASET) throw InvalidArgumentError("no dataset " + child_path(name) + " in the file");
  const QuietErrors quiet;
  const Handle dataset =
      checked(H5Dopen2(id(), name.c_str(), H5P_DEFAULT), H5Dclose, "cannot open " + child_path(name));
  const Handle type = checked(H5Dget_type(dataset.id()), H5Tclose, "cannot read the type of " + child_path(name));
  if (H5Tget_class(type.id()) != H5T_FLOAT || H5Tget_size(type.id()) != 4)
    throw InvalidArgumentError("dataset " + child_path(name) + " is not float32 (" +
                               (H5Tget_class(type.id()) == H5T_FLOAT
                                    ? "float" + std::to_string(8 * H5Tget_size(type.id()))
                                    : std::string("not a floating-point type")) +
                               "); devtensor's variables are float32");
  const Handle space = checked(H5Dget_space(dataset.id()), H5Sclose, "cannot read the shape of " + child_path(name));
  const int rank = H5Sget_simple_extent_ndims(space.id());
  if (rank < 0) throw InvalidArgumentError("cannot read the shape of " + child_path(name));
  std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
  H5Sget_simple_extent_dims(space.id(), dims.data(), nullptr);
  std::vector<std::int64_t> shape(dims.begin(), dims.end());
  std::uint64_t count = 1;
  for (const auto d : dims)
    if (__builtin_mul_overflow(count, static_cast<std::uint64_t>(d), &count) || count > max_elements)
      throw InvalidArgumentError("dataset " + child_path(name) + " declares more than " + std::to_string(max_elements) +
                                 " values (a damaged file?)");
  std::vector<float> values(static_cast<std::size_t>(count));
  if (count > 0 && H5Dread(dataset.id(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) < 0)
    throw InvalidArgumentError("cannot read the values of " + child_path(name) + " (a damaged file?)");
  return {std::move(shape), std::move(values)};
}

inline void Group::write_int64(const std::string& name, std::int64_t value) {
  const Handle space = checked<InternalError>(H5Screate(H5S_SCALAR), H5Sclose, "HDF5: cannot make a scalar space");
  const Handle dataset = checked<InternalError>(
      H5Dcreate2(id(), name.c_str(), H5T_STD_I64LE, space.id(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Dclose,
      "HDF5: cannot create dataset " + child_path(name));
  check(H5Dwrite(dataset.id(), H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, &value), "writing " + child_path(name));
}

inline std::int64_t Group::read_int64(const std::string& name) const {
  if (type_of(name) != H5O_TYPE_DATASET) throw InvalidArgumentError("no dataset " + child_path(name) + " in the file");
  const QuietErrors quiet;
  const Handle dataset =
      checked(H5Dopen2(id(), name.c_str(), H5P_DEFAULT), H5Dclose, "cannot open " + child_path(name));
  const Handle type = checked(H5Dget_type(dataset.id()), H5Tclose, "cannot read the type of " + child_path(name));
  const Handle space = checked(H5Dget_space(dataset.id()), H5Sclose, "cannot read the shape of " + child_path(name));
  if (H5Tget_class(type.id()) != H5T_INTEGER || H5Sget_simple_extent_npoints(space.id()) != 1)
    throw InvalidArgumentError("dataset " + child_path(name) + " is not a scalar integer");
  std::int64_t value = 0;
  if (H5Dread(dataset.id(), H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, &value) < 0)
    throw InvalidArgumentError("cannot read " + child_path(name) + " (a damaged file?)");
  return value;
}

inline Group create_file(const std::filesystem::path& path) {
  const QuietErrors quiet;
  return Group(
      checked(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose,
              "cannot create the HDF5 file " + path.string() + ": check that its folder exists and is writable"),
      "/");
}

namespace file_detail {
/// A file-access property list for HDF5's core (memory) driver without a backing file.
inline Handle memory_access() {
  Handle access = checked<InternalError>(H5Pcreate(H5P_FILE_ACCESS), H5Pclose, "HDF5: cannot make a property list");
  check(H5Pset_fapl_core(access.id(), 1 << 20, /*backing_store=*/0), "selecting the core driver");
  return access;
}
/// A name no other open in-memory file has (HDF5 refuses to open one name twice).
inline std::string memory_file_name() {
  static std::atomic<unsigned long> next{0};
  return "devtensor-memory-" + std::to_string(next++) + ".h5";
}
}  // namespace file_detail

inline Group create_in_memory() {
  const QuietErrors quiet;
  const Handle access = file_detail::memory_access();
  return Group(checked<InternalError>(
                   H5Fcreate(file_detail::memory_file_name().c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, access.id()),
                   H5Fclose, "HDF5: cannot create a file in memory"),
               "/");
}

inline std::vector<unsigned char> file_image(const Group& root) {
  const QuietErrors quiet;
  check(H5Fflush(root.id(), H5F_SCOPE_GLOBAL), "flushing a file");
  const ssize_t size = H5Fget_file_image(root.id(), nullptr, 0);
  if (size < 0) throw InternalError("HDF5: cannot read the size of a file's image");
  std::vector<unsigned char> bytes(static_cast<std::size_t>(size));
  if (H5Fget_file_image(root.id(), bytes.data(), bytes.size()) != size)
    throw InternalError("HDF5: cannot copy a file's image");
  return bytes;
}

namespace file_detail {
/// HDF5's file-image callbacks for a borrowed image: `udata` is the caller's buffer, which every
/// "allocation" returns and no "free" releases; copies onto itself are no-ops, and nothing grows
/// (the file is read-only).
inline H5FD_file_image_callbacks_t borrowed_image_callbacks() {
  H5FD_file_image_callbacks_t callbacks{};
  callbacks.image_malloc = [](size_t, H5FD_file_image_op_t, void* udata) -> void* { return udata; };
  callbacks.image_memcpy = [](void* dest, const void* src, size_t, H5FD_file_image_op_t, void* udata) -> void* {
    return dest == udata && src == udata ? dest : nullptr;
  };
  callbacks.image_realloc = [](void*, size_t, H5FD_file_image_op_t, void*) -> void* { return nullptr; };
  callbacks.image_free = [](void*, H5FD_file_image_op_t, void*) -> herr_t { return 0; };
  callbacks.udata_copy = [](void* udata) -> void* { return udata; };  // the pointer itself is shared
  callbacks.udata_free = [](void*) -> herr_t { return 0; };
  callbacks.udata = nullptr;
  return callbacks;
}
}  // namespace file_detail

inline Group open_image(const std::vector<unsigned char>& bytes, const std::string& what, bool borrow) {
  const QuietErrors quiet;
  if (bytes.size() < 8)
    throw InvalidArgumentError(what + " is not an HDF5 file (" + std::to_string(bytes.size()) + " bytes)");
  const Handle access = file_detail::memory_access();
  if (borrow) {
    H5FD_file_image_callbacks_t callbacks = file_detail::borrowed_image_callbacks();
    callbacks.udata = const_cast<unsigned char*>(bytes.data());  // read only: the file is opened read-only
    check(H5Pset_file_image_callbacks(access.id(), &callbacks), "setting the file image callbacks");
  }
  check(H5Pset_file_image(access.id(), const_cast<unsigned char*>(bytes.data()), bytes.size()), "setting a file image");
  return Group(checked(H5Fopen(file_detail::memory_file_name().c_str(), H5F_ACC_RDONLY, access.id()), H5Fclose,
                       "cannot open " + what + " as an HDF5 file (truncated or damaged?)"),
               "/");
}

inline Group open_file(const std::filesystem::path& path) {
  if (!std::filesystem::exists(path)) throw NotFoundError("no such file: " + path.string());
  const QuietErrors quiet;
  if (H5Fis_hdf5(path.c_str()) <= 0)
    throw InvalidArgumentError(path.string() + " is not an HDF5 file (a Keras weights file is: x.weights.h5)");
  return Group(checked(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose,
                       "cannot open the HDF5 file " + path.string() + " (truncated or damaged?)"),
               "/");
}

}  // namespace devtensor::hdf5
