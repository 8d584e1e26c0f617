#pragma once
// Row builders for config tables: one template per value kind, bound to a
// struct member at compile time, so a table row is a single line.

#include <limits>
#include <string>
#include <type_traits>

#include "core/protocol/units.h"
#include "core/runtime/config.h"

namespace ibbcast::config_detail {

template <typename M>
struct MemberTraits;
template <typename C, typename V>
struct MemberTraits<V C::*> {
  using Owner = C;
  using Value = V;
};

template <auto M>
using OwnerOf = typename MemberTraits<decltype(M)>::Owner;
template <auto M>
using ValueOf = typename MemberTraits<decltype(M)>::Value;

template <auto M>
Status store_uint(OwnerOf<M>& cfg, Result<uint64_t> v) {
  if (!v) return v.status();
  if (*v > std::numeric_limits<ValueOf<M>>::max()) {
    return make_error(Errc::kInvalidArgument, "value too large");
  }
  cfg.*M = static_cast<ValueOf<M>>(*v);
  return Status::ok();
}

template <auto M>
ConfigField<OwnerOf<M>> size_field(std::string_view name, std::string_view def,
                                   std::string_view doc) {
  return {name, def, doc,
          [](OwnerOf<M>& c, std::string_view t) { return store_uint<M>(c, parse_size(t)); },
          [](const OwnerOf<M>& c) { return format_size(c.*M); }};
}

template <auto M>
ConfigField<OwnerOf<M>> uint_field(std::string_view name, std::string_view def,
                                   std::string_view doc) {
  return {name, def, doc,
          [](OwnerOf<M>& c, std::string_view t) { return store_uint<M>(c, parse_uint(t)); },
          [](const OwnerOf<M>& c) { return std::to_string(c.*M); }};
}

/// An integer in [Min, Max]; anything else is refused with the range.
template <auto M, uint64_t Min, uint64_t Max>
ConfigField<OwnerOf<M>> ranged_uint_field(std::string_view name, std::string_view def,
                                          std::string_view doc) {
  static_assert(Max <= std::numeric_limits<ValueOf<M>>::max());
  return {name, def, doc,
          [](OwnerOf<M>& c, std::string_view t) {
            auto v = parse_uint(t);
            if (!v) return v.status();
            if (*v < Min || *v > Max) {
              return make_error(Errc::kInvalidArgument,
                                "must be " + std::to_string(Min) + ".." + std::to_string(Max));
            }
            c.*M = static_cast<ValueOf<M>>(*v);
            return Status::ok();
          },
          [](const OwnerOf<M>& c) { return std::to_string(c.*M); }};
}

template <auto M>
ConfigField<OwnerOf<M>> bool_field(std::string_view name, std::string_view def,
                                   std::string_view doc) {
  return {name, def, doc,
          [](OwnerOf<M>& c, std::string_view t) {
            auto v = parse_bool(t);
            if (!v) return v.status();
            c.*M = *v;
            return Status::ok();
          },
          [](const OwnerOf<M>& c) { return format_bool(c.*M); }};
}

template <auto M>
ConfigField<OwnerOf<M>> duration_field(std::string_view name, std::string_view def,
                                       std::string_view doc) {
  return {name, def, doc,
          [](OwnerOf<M>& c, std::string_view t) {
            auto v = parse_duration(t);
            if (!v) return v.status();
            c.*M = *v;
            return Status::ok();
          },
          [](const OwnerOf<M>& c) { return format_duration(c.*M); }};
}

template <auto M>
ConfigField<OwnerOf<M>> string_field(std::string_view name, std::string_view def,
                                     std::string_view doc) {
  return {name, def, doc,
          [](OwnerOf<M>& c, std::string_view t) {
            c.*M = std::string(t);
            return Status::ok();
          },
          [](const OwnerOf<M>& c) { return std::string(c.*M); }};
}

}  // namespace ibbcast::config_detail
