#pragma once
/// @file zip_archive.hpp
/// @brief Zip archives through libzip, read whole into memory with the checks a file from the
/// internet needs, and written with stored (uncompressed) members as Keras writes them.
///
/// Reading never uses a member's name as a path: the members become bytes in memory, looked up by
/// name. An archive is refused, with an InvalidArgumentError that names the file and the member,
/// when it is not a zip archive or is truncated, when a member's name is absolute, climbs out of
/// the archive (`..`) or repeats another's, when a member is larger than the limits allow or than
/// its compressed size can explain (a zip bomb), and when a member's bytes do not match its size
/// or its checksum. Sizes are checked before anything is allocated. Part of the keras_archive
/// component (Debian: libzip-dev).

#include <zip.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "devtensor/core/error.hpp"

namespace devtensor::nn::saving {

/// What a read archive may hold.
struct ZipLimits {
  /// Members in the archive.
  std::uint64_t max_members = 10'000;
  /// Bytes of one member once decompressed, and of all of them together.
  std::uint64_t max_member_bytes = std::uint64_t{16} << 30;
  std::uint64_t max_total_bytes = std::uint64_t{32} << 30;
  /// A compressed member of more than 1 MiB may expand at most this many times (Keras's loader
  /// refuses members over 100x their compressed size too).
  std::uint64_t max_expansion = 100;
};

/// The members of an archive, by name, in memory.
class ZipContents {
 public:
  [[nodiscard]] bool has(const std::string& name) const { return members_.contains(name); }
  /// @throws InvalidArgumentError when the archive has no such member.
  [[nodiscard]] const std::vector<unsigned char>& at(const std::string& name) const {
    const auto it = members_.find(name);
    if (it == members_.end())
      throw InvalidArgumentError(source_ + " has no member '" + name + "'; a Keras 3 .keras archive holds " +
                                 "metadata.json, config.json and model.weights.h5");
    return it->second;
  }
  [[nodiscard]] std::string text(const std::string& name) const {
    const auto& bytes = at(name);
    return {bytes.begin(), bytes.end()};
  }
  [[nodiscard]] std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& [name, bytes] : members_) out.push_back(name);
    return out;
  }

 private:
  friend ZipContents read_open_zip(zip_t*, const std::string&, std::uint64_t, const ZipLimits&);
  std::string source_;
  std::map<std::string, std::vector<unsigned char>> members_;
};

/// Reads every member of the archive at `path`. @throws NotFoundError when there is no such file,
/// InvalidArgumentError for an archive refused as the file's comment says.
[[nodiscard]] ZipContents read_zip(const std::filesystem::path& path, const ZipLimits& limits = {});
/// The same from an archive in memory (`source` names it in errors).
[[nodiscard]] ZipContents read_zip(const std::vector<unsigned char>& bytes, const std::string& source,
                                   const ZipLimits& limits = {});

/// A member to write: its name and bytes (stored, not compressed).
struct ZipMember {
  std::string name;
  std::vector<unsigned char> bytes;
};
/// Writes an archive of `members`, in order, to `path` (replaced). @throws UnavailableError when
/// it cannot be written.
void write_zip(const std::filesystem::path& path, const std::vector<ZipMember>& members);

/// Why a member's name is not a plain relative path inside an archive; empty when it is.
[[nodiscard]] std::string unsafe_member_name(const std::string& name);

// ---------------------------------------------------------------------------------------------
// Definitions: only programs that use the component include this header, so they are inline.

namespace zip_detail {
struct ArchiveCloser {
  void operator()(zip_t* archive) const noexcept { zip_discard(archive); }  // read-only: nothing to write
};
struct FileCloser {
  void operator()(zip_file_t* file) const noexcept { zip_fclose(file); }
};
inline std::string open_error(int code) {
  zip_error_t error;
  zip_error_init_with_code(&error, code);
  std::string text = zip_error_strerror(&error);
  zip_error_fini(&error);
  return text;
}
}  // namespace zip_detail

inline std::string unsafe_member_name(const std::string& name) {
  if (name.empty()) return "it is empty";
  if (name.find('\0') != std::string::npos) return "it holds a NUL character";
  if (name.front() == '/' || name.front() == '\\') return "it is an absolute path";
  if (name.size() > 1 && name[1] == ':') return "it starts with a drive letter";
  if (name.find('\\') != std::string::npos) return "it holds a backslash";
  std::size_t start = 0;
  while (start <= name.size()) {
    const std::size_t end = std::min(name.find('/', start), name.size());
    if (name.compare(start, end - start, "..") == 0) return "it climbs out of the archive (a '..' component)";
    start = end + 1;
  }
  return {};
}

/// The members of an open archive of `file_size` bytes (the archive stays the caller's).
ZipContents read_open_zip(zip_t* archive, const std::string& source, std::uint64_t file_size, const ZipLimits& limits);

namespace zip_detail {
/// Throws for an archive zip_open could not open (`code`: libzip's reason).
[[noreturn]] inline void refuse_open(const std::string& source, int code) {
  if (code == ZIP_ER_EXISTS)  // libzip's consistency check finds two members of one name
    throw InvalidArgumentError(source + ": refused the archive: two of its members have the same name");
  throw InvalidArgumentError(source + " is not a zip archive that can be read (" + open_error(code) +
                             "); a .keras file is one, as Keras 3's model.save writes it");
}
}  // namespace zip_detail

inline ZipContents read_zip(const std::filesystem::path& path, const ZipLimits& limits) {
  const std::string source = path.string();
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    if (!std::filesystem::exists(path, ec)) throw NotFoundError("no such file: " + source);
    throw InvalidArgumentError(source + " is not a regular file");
  }
  const std::uint64_t file_size = std::filesystem::file_size(path, ec);
  int code = 0;
  std::unique_ptr<zip_t, zip_detail::ArchiveCloser> archive(
      zip_open(source.c_str(), ZIP_RDONLY | ZIP_CHECKCONS, &code));
  if (!archive) zip_detail::refuse_open(source, code);
  return read_open_zip(archive.get(), source, file_size, limits);
}

inline ZipContents read_zip(const std::vector<unsigned char>& bytes, const std::string& source,
                            const ZipLimits& limits) {
  zip_error_t error;
  zip_error_init(&error);
  zip_source_t* buffer = zip_source_buffer_create(bytes.data(), bytes.size(), 0, &error);
  if (!buffer) {
    zip_error_fini(&error);
    throw ResourceExhaustedError("cannot read " + source + ": libzip could not make a buffer source");
  }
  std::unique_ptr<zip_t, zip_detail::ArchiveCloser> archive(
      zip_open_from_source(buffer, ZIP_RDONLY | ZIP_CHECKCONS, &error));
  if (!archive) {
    const int code = zip_error_code_zip(&error);
    zip_error_fini(&error);
    zip_source_free(buffer);  // not taken by a failed open
    zip_detail::refuse_open(source, code);
  }
  zip_error_fini(&error);
  return read_open_zip(archive.get(), source, bytes.size(), limits);
}

inline ZipContents read_open_zip(zip_t* opened, const std::string& source, std::uint64_t file_size,
                                 const ZipLimits& limits) {
  zip_t* const archive = opened;
  const zip_int64_t count = zip_get_num_entries(archive, 0);
  if (count < 0 || static_cast<std::uint64_t>(count) > limits.max_members)
    throw InvalidArgumentError(source + " holds " + std::to_string(count) + " members, more than the " +
                               std::to_string(limits.max_members) + " a model archive may");
  const auto refuse = [&](const std::string& member, const std::string& why) {
    return InvalidArgumentError(source + ": refused the archive: its member '" + member + "' " + why);
  };
  ZipContents contents;
  contents.source_ = source;
  std::uint64_t total = 0;
  for (zip_int64_t i = 0; i < count; ++i) {
    zip_stat_t stat;
    zip_stat_init(&stat);
    if (zip_stat_index(archive, static_cast<zip_uint64_t>(i), 0, &stat) != 0 || !(stat.valid & ZIP_STAT_NAME) ||
        !(stat.valid & ZIP_STAT_SIZE) || !(stat.valid & ZIP_STAT_COMP_SIZE))
      throw InvalidArgumentError(source + ": cannot read the directory entry of member " + std::to_string(i) +
                                 " (a damaged archive?)");
    const std::string name = stat.name;
    if (const std::string why = unsafe_member_name(name); !why.empty())
      throw refuse(name, "is not a name inside the archive: " + why);
    if (contents.members_.contains(name)) throw refuse(name, "appears twice");
    if (!name.empty() && name.back() == '/') continue;  // a folder
    if (stat.size > limits.max_member_bytes || total + stat.size > limits.max_total_bytes)
      throw refuse(name, "declares " + std::to_string(stat.size) + " bytes, more than the limit of " +
                             std::to_string(std::min(limits.max_member_bytes, limits.max_total_bytes - total)));
    if (stat.comp_size > file_size)
      throw refuse(name, "declares " + std::to_string(stat.comp_size) + " compressed bytes in a file of " +
                             std::to_string(file_size) + " (a truncated archive?)");
    const bool stored = (stat.valid & ZIP_STAT_COMP_METHOD) && stat.comp_method == ZIP_CM_STORE;
    if (stored ? stat.size != stat.comp_size
               : stat.size > (std::uint64_t{1} << 20) &&
                     stat.size / std::max<std::uint64_t>(stat.comp_size, 1) > limits.max_expansion)
      throw refuse(name, "declares " + std::to_string(stat.size) + " bytes from " + std::to_string(stat.comp_size) +
                             " compressed ones (a zip bomb?)");
    total += stat.size;
    std::unique_ptr<zip_file_t, zip_detail::FileCloser> file(zip_fopen_index(archive, static_cast<zip_uint64_t>(i), 0));
    if (!file)
      throw refuse(name, "cannot be opened (" + std::string(zip_strerror(archive)) +
                             "); devtensor reads stored and deflated members");
    std::vector<unsigned char> bytes(static_cast<std::size_t>(stat.size));
    std::uint64_t got = 0;
    while (got < stat.size) {
      const zip_int64_t n = zip_fread(file.get(), bytes.data() + got, stat.size - got);
      if (n < 0) throw refuse(name, "cannot be read (" + std::string(zip_file_strerror(file.get())) + ")");
      if (n == 0) break;
      got += static_cast<std::uint64_t>(n);
    }
    unsigned char extra = 0;  // a member longer than declared
    if (got != stat.size || zip_fread(file.get(), &extra, 1) != 0)
      throw refuse(name, "does not hold the " + std::to_string(stat.size) + " bytes it declares (a damaged archive?)");
    contents.members_.emplace(name, std::move(bytes));
  }
  return contents;
}

inline void write_zip(const std::filesystem::path& path, const std::vector<ZipMember>& members) {
  const std::string target = path.string();
  int code = 0;
  zip_t* archive = zip_open(target.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &code);
  if (!archive)
    throw UnavailableError("cannot create " + target + " (" + zip_detail::open_error(code) +
                           "): check that its folder exists and is writable");
  const auto fail = [&](const std::string& what) {
    const std::string why = zip_strerror(archive);
    zip_discard(archive);
    return UnavailableError("cannot write " + target + ": " + what + " (" + why + ")");
  };
  for (const auto& member : members) {
    zip_source_t* source = zip_source_buffer(archive, member.bytes.data(), member.bytes.size(), 0);
    if (!source) throw fail("buffering " + member.name);
    const zip_int64_t index = zip_file_add(archive, member.name.c_str(), source, ZIP_FL_ENC_UTF_8 | ZIP_FL_OVERWRITE);
    if (index < 0) {
      zip_source_free(source);
      throw fail("adding " + member.name);
    }
    if (zip_set_file_compression(archive, static_cast<zip_uint64_t>(index), ZIP_CM_STORE, 0) != 0)
      throw fail("storing " + member.name);
  }
  if (zip_close(archive) != 0) throw fail("closing it (is the disk full?)");
}

}  // namespace devtensor::nn::saving
