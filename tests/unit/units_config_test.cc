#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "core/protocol/units.h"
#include "core/runtime/config.h"
#include "core/runtime/engine_config_table.h"
#include "transports/udp/udp_config.h"

namespace ibbcast {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::nanoseconds;
using std::chrono::seconds;

TEST(Units, ParseSizeAcceptsSuffixes) {
  const std::pair<const char*, uint64_t> kCases[] = {
      {"0", 0},
      {"4096", 4096},
      {"64k", 65536},
      {"64K", 65536},
      {"1m", 1u << 20},
      {"2g", 2ull << 30},
      {"1kb", 1024},
      {"1KiB", 1024},
      {"3MB", 3u << 20},
      {"1gib", 1ull << 30},
      {"18446744073709551615", ~uint64_t{0}},
  };
  for (const auto& [text, want] : kCases) {
    auto v = parse_size(text);
    ASSERT_TRUE(v) << text << ": " << v.status().to_string();
    EXPECT_EQ(*v, want) << text;
  }
}

TEST(Units, ParseSizeRejectsJunk) {
  for (const char* text : {"", "k", "12x", "-1", "99999999999999999999g", "17179869184g", " 1",
                           "1 k", "1.5k", "+1", "1t", "0x10", "1kk"}) {
    auto v = parse_size(text);
    EXPECT_FALSE(v) << "'" << text << "' parsed as " << (v ? *v : 0);
    EXPECT_EQ(v.status().code(), Errc::kInvalidArgument) << text;
  }
}

TEST(Units, ParseDuration) {
  const std::pair<const char*, Duration> kCases[] = {
      {"250us", microseconds(250)},
      {"10ms", milliseconds(10)},
      {"30s", seconds(30)},
      {"100ns", nanoseconds(100)},
      {"2m", std::chrono::minutes(2)},
      {"5", microseconds(5)},
      {"0", Duration(0)},
      {"10MS", milliseconds(10)},
      {"3min", std::chrono::minutes(3)},
  };
  for (const auto& [text, want] : kCases) {
    auto v = parse_duration(text);
    ASSERT_TRUE(v) << text << ": " << v.status().to_string();
    EXPECT_EQ(v->count(), want.count()) << text;
  }
  for (const char* text : {"", "ms", "10x", "-5ms", "1.5s", "10 ms", "1h", "10msec",
                           "99999999999999999999ns", "9223372036854775808ns", "10000000000000s"}) {
    EXPECT_FALSE(parse_duration(text)) << "'" << text << "'";
  }
  EXPECT_TRUE(parse_duration("9223372036854775807ns"));
}

TEST(Units, ParseBool) {
  for (const char* t : {"1", "on", "true", "yes", "ON", "True", "YES"}) {
    auto v = parse_bool(t);
    ASSERT_TRUE(v) << t;
    EXPECT_TRUE(*v) << t;
  }
  for (const char* t : {"0", "off", "false", "no", "OFF", "False"}) {
    auto v = parse_bool(t);
    ASSERT_TRUE(v) << t;
    EXPECT_FALSE(*v) << t;
  }
  for (const char* t : {"", "2", "enabled", "onn", " on"})
    EXPECT_FALSE(parse_bool(t)) << t;
  EXPECT_EQ(format_bool(true), "on");
  EXPECT_EQ(format_bool(false), "off");
}

TEST(Units, ParseUint) {
  EXPECT_EQ(*parse_uint("4096"), 4096u);
  EXPECT_FALSE(parse_uint("4k"));
  EXPECT_FALSE(parse_uint(""));
  EXPECT_FALSE(parse_uint("-3"));
}

TEST(Units, FormatSizeIsShortestAndRoundTrips) {
  EXPECT_EQ(format_size(0), "0");
  EXPECT_EQ(format_size(1000), "1000");
  EXPECT_EQ(format_size(65536), "64k");
  EXPECT_EQ(format_size(1536), "1536");
  EXPECT_EQ(format_size(3u << 20), "3m");
  EXPECT_EQ(format_size(2ull << 30), "2g");
  for (uint64_t v : {uint64_t{0}, uint64_t{1}, uint64_t{1023}, uint64_t{1024}, uint64_t{65000},
                     uint64_t{1} << 20, (uint64_t{1} << 20) + 1024, uint64_t{5} << 30,
                     uint64_t{1} << 63, ~uint64_t{0}}) {
    auto back = parse_size(format_size(v));
    ASSERT_TRUE(back) << format_size(v);
    EXPECT_EQ(*back, v) << format_size(v);
  }
}

TEST(Units, FormatDurationIsShortestAndRoundTrips) {
  EXPECT_EQ(format_duration(seconds(30)), "30s");
  EXPECT_EQ(format_duration(milliseconds(10)), "10ms");
  EXPECT_EQ(format_duration(microseconds(250)), "250us");
  EXPECT_EQ(format_duration(nanoseconds(100)), "100ns");
  EXPECT_EQ(format_duration(Duration(0)), "0us");
  EXPECT_EQ(format_duration(milliseconds(1500)), "1500ms");
  for (Duration d : {Duration(0), Duration(1), Duration(999), Duration(1000), Duration(1001000),
                     Duration(milliseconds(10)), Duration(seconds(120)),
                     Duration(std::chrono::hours(1000)), Duration::max()}) {
    auto back = parse_duration(format_duration(d));
    ASSERT_TRUE(back) << format_duration(d);
    EXPECT_EQ(back->count(), d.count()) << format_duration(d);
  }
}

TEST(Config, NamesDerivedFromTheField) {
  EXPECT_EQ(env_name("fragment_size"), "IBBCAST_FRAGMENT_SIZE");
  EXPECT_EQ(flag_name("fragment_size"), "fragment-size");
  EXPECT_EQ(env_name("fibo_s"), "IBBCAST_FIBO_S");
  EXPECT_EQ(flag_name("timeout"), "timeout");
  EXPECT_EQ(config_origin_name(ConfigOrigin::kDefault), "default");
  EXPECT_EQ(config_origin_name(ConfigOrigin::kEnv), "env");
  EXPECT_EQ(config_origin_name(ConfigOrigin::kFlag), "flag");
  EXPECT_EQ(config_origin_name(ConfigOrigin::kApi), "api");
}

TEST(Config, EveryDefaultParsesAndIsCanonical) {
  const EngineConfig built_in{};
  for (const auto& f : engine_config_table()) {
    EngineConfig c;
    Status st = f.parse(c, f.default_value);
    EXPECT_TRUE(st) << f.name << "=" << f.default_value << ": " << st.to_string();
    // The formatted default is the text itself, and agrees with the struct's initializer.
    EXPECT_EQ(f.format(c), f.default_value) << f.name;
    EXPECT_EQ(f.format(built_in), f.default_value) << f.name << " (EngineConfig initializer)";
    EXPECT_FALSE(f.doc.empty()) << f.name;
  }
  Config<EngineConfig> cfg("engine", engine_config_table());
  auto rows = cfg.rows();
  ASSERT_EQ(rows.size(), engine_config_table().size());
  std::set<std::string> names;
  for (const auto& r : rows) {
    EXPECT_EQ(r.value, r.default_value) << r.name;
    EXPECT_EQ(r.origin, "default") << r.name;
    EXPECT_EQ(r.layer, "engine");
    EXPECT_TRUE(names.insert(r.name).second) << "duplicate " << r.name;
  }
}

EnvLookup MapEnv(std::map<std::string, std::string> m) {
  return [m = std::move(m)](std::string_view name) -> std::optional<std::string> {
    auto it = m.find(std::string(name));
    if (it == m.end()) return std::nullopt;
    return it->second;
  };
}

std::string RowValue(const Config<EngineConfig>& cfg, std::string_view name, std::string* origin) {
  for (const auto& r : cfg.rows()) {
    if (r.name != name) continue;
    *origin = r.origin;
    return r.value;
  }
  ADD_FAILURE() << "no row " << name;
  return "";
}

TEST(Config, LoadEnvSetsValuesAndOrigin) {
  Config<EngineConfig> cfg("engine", engine_config_table());
  Status st = cfg.load_env(MapEnv({{"IBBCAST_FRAGMENT_SIZE", "8k"},
                                   {"IBBCAST_ALGORITHM", "fibo-tree"},
                                   {"IBBCAST_ROOT_DELAY", "10ms"},
                                   {"IBBCAST_CHECKSUM", "off"},
                                   {"IBBCAST_NOT_A_KNOB", "junk"},
                                   {"fragment_size", "junk"}}));
  ASSERT_TRUE(st) << st.to_string();
  EXPECT_EQ(cfg.value().fragment_size, 8192u);
  EXPECT_EQ(cfg.value().algorithm, Algorithm::kFiboTree);
  EXPECT_EQ(cfg.value().root_delay, milliseconds(10));
  EXPECT_FALSE(cfg.value().checksum);
  std::string origin;
  EXPECT_EQ(RowValue(cfg, "fragment_size", &origin), "8k");
  EXPECT_EQ(origin, "env");
  EXPECT_EQ(RowValue(cfg, "algorithm", &origin), "fibo_tree");
  EXPECT_EQ(origin, "env");
  EXPECT_EQ(RowValue(cfg, "root_delay", &origin), "10ms");
  EXPECT_EQ(origin, "env");
  EXPECT_EQ(RowValue(cfg, "checksum", &origin), "off");
  EXPECT_EQ(origin, "env");
  EXPECT_EQ(RowValue(cfg, "timeout", &origin), "0us");
  EXPECT_EQ(origin, "default");
}

TEST(Config, LoadEnvBadValueNamesTheVariable) {
  for (const auto& [var, text] :
       std::map<std::string, std::string>{{"IBBCAST_FRAGMENT_SIZE", "100"},
                                          {"IBBCAST_ALGORITHM", "quantum"},
                                          {"IBBCAST_ROOT_DELAY", "soon"},
                                          {"IBBCAST_CHECKSUM", "maybe"},
                                          {"IBBCAST_CROSSOVER_NODES", "4k"},
                                          {"IBBCAST_EARLY_DATAGRAMS", "4294967296"},
                                          {"IBBCAST_KNOMIAL_RADIX", "1"},
                                          {"IBBCAST_FIBO_S", "0"}}) {
    Config<EngineConfig> cfg("engine", engine_config_table());
    Status st = cfg.load_env(MapEnv({{var, text}}));
    EXPECT_EQ(st.code(), Errc::kInvalidArgument) << var << "=" << text;
    EXPECT_NE(st.message().find(var), std::string::npos) << st.message();
  }
}

TEST(Config, SetByNameAndFlagName) {
  Config<EngineConfig> cfg("engine", engine_config_table());
  EXPECT_TRUE(cfg.set("fragment_size", "4k", ConfigOrigin::kApi));
  EXPECT_EQ(cfg.value().fragment_size, 4096u);
  EXPECT_TRUE(cfg.set("crossover-size", "2m", ConfigOrigin::kFlag));
  EXPECT_EQ(cfg.value().crossover_size, 2u << 20);
  std::string origin;
  EXPECT_EQ(cfg.value().multicast_max_size, kAnySize);  // "any"
  EXPECT_TRUE(cfg.set("multicast-max-size", "64k", ConfigOrigin::kFlag));
  EXPECT_EQ(cfg.value().multicast_max_size, 64u << 10);
  EXPECT_EQ(RowValue(cfg, "multicast_max_size", &origin), "64k");
  EXPECT_TRUE(cfg.set("multicast_max_size", "any", ConfigOrigin::kFlag));
  EXPECT_EQ(cfg.value().multicast_max_size, kAnySize);
  EXPECT_EQ(RowValue(cfg, "multicast_max_size", &origin), "any");
  Status bad = cfg.set("multicast_max_size", "lots", ConfigOrigin::kFlag);
  EXPECT_EQ(bad.code(), Errc::kInvalidArgument);
  EXPECT_NE(bad.message().find("'any'"), std::string::npos) << bad.message();
  EXPECT_TRUE(cfg.set("print-statistics", "yes", ConfigOrigin::kFlag));
  EXPECT_TRUE(cfg.value().print_statistics);
  RowValue(cfg, "fragment_size", &origin);
  EXPECT_EQ(origin, "api");
  RowValue(cfg, "crossover_size", &origin);
  EXPECT_EQ(origin, "flag");
  EXPECT_TRUE(cfg.has("knomial-radix"));
  EXPECT_TRUE(cfg.has("knomial_radix"));
  EXPECT_FALSE(cfg.has("IBBCAST_KNOMIAL_RADIX"));

  Status st = cfg.set("no_such_knob", "1", ConfigOrigin::kFlag);
  EXPECT_EQ(st.code(), Errc::kInvalidArgument);
  EXPECT_NE(st.message().find("no_such_knob"), std::string::npos) << st.message();
  EXPECT_FALSE(cfg.set("fragment_size!", "4k", ConfigOrigin::kFlag));
}

TEST(Config, FragmentSizeRange) {
  Config<EngineConfig> cfg("engine", engine_config_table());
  for (const char* ok : {"0", "256", "1k", "65000", "9000"}) {
    EXPECT_TRUE(cfg.set("fragment_size", ok, ConfigOrigin::kApi)) << ok;
  }
  for (const char* bad : {"1", "255", "65001", "64k", "1g", "x"}) {
    Status st = cfg.set("fragment_size", bad, ConfigOrigin::kApi);
    EXPECT_EQ(st.code(), Errc::kInvalidArgument) << bad;
  }
  EXPECT_EQ(cfg.value().fragment_size, 9000u);  // a rejected value leaves the last good one
}

}  // namespace
}  // namespace ibbcast

TEST(Env, UnknownNamesComeWithTheClosestKnownName) {
  const std::vector<std::string> known = {"IBBCAST_FRAGMENT_SIZE", "IBBCAST_ALGORITHM",
                                          "IBBCAST_UDP_INTERFACE"};
  auto u = ibbcast::unknown_names({"IBBCAST_FRAGMENTSIZE", "IBBCAST_ALGORITHM",
                                   "IBBCAST_UDP_INTERFCE", "IBBCAST_SOMETHING_ELSE_ENTIRELY"},
                                  known);
  ASSERT_EQ(u.size(), 3u);
  EXPECT_EQ(u[0], std::make_pair(std::string("IBBCAST_FRAGMENTSIZE"),
                                 std::string("IBBCAST_FRAGMENT_SIZE")));
  EXPECT_EQ(u[1], std::make_pair(std::string("IBBCAST_UDP_INTERFCE"),
                                 std::string("IBBCAST_UDP_INTERFACE")));
  EXPECT_EQ(u[2].first, "IBBCAST_SOMETHING_ELSE_ENTIRELY");
  EXPECT_EQ(u[2].second, "");  // nothing near: no guess
}

namespace ibbcast {

TEST(UdpGroup, CheckedWhenReadWithTheReason) {
  Config<udp::UdpConfig> cfg("udp", udp::udp_config_table());
  const std::pair<const char*, const char*> bad[] = {
      {"udp4:1.2.3.4:5000", "not a multicast address"},
      {"udp4:239.1.1.1:99999", "not in 1..65535"},
      {"udp4:239.1.1.1:0", "not in 1..65535"},
      {"udp4:300.1.1.1:5000", "not an IPv4 address"},
      {"udp6:[2001:db8::1]:5000", "not a multicast address"},
      {"udp4:239.1.1.1", "no port"},
      {"udp4:239.1.1.1:40k", "is not a number"},
      {"239.1.1.1:5000", "neither udp4: nor udp6:["},
  };
  for (const auto& [text, why] : bad) {
    Status st = cfg.set("udp_group", text, ConfigOrigin::kFlag);
    EXPECT_EQ(st.code(), Errc::kInvalidArgument) << text;
    EXPECT_NE(st.message().find(why), std::string::npos) << text << ": " << st.message();
    EXPECT_EQ(cfg.value().group, "") << "a refused value is not kept: " << text;
  }
  ASSERT_TRUE(cfg.set("udp_group", "udp6:[ff15::1:2]:40000", ConfigOrigin::kFlag));
  EXPECT_EQ(cfg.value().group, "udp6:[ff15::1:2]:40000");
}

TEST(UdpClass, DscpAndPriorityInRangeOrRefusedWithTheRange) {
  Config<udp::UdpConfig> cfg("udp", udp::udp_config_table());
  EXPECT_EQ(cfg.value().dscp, 0u);
  EXPECT_EQ(cfg.value().priority, 0u);
  for (const auto& [key, bad, why] :
       {std::tuple{"udp_dscp", "64", "0..63"}, std::tuple{"udp_priority", "16", "0..15"},
        std::tuple{"udp_dscp", "ef", "number"}}) {
    Status st = cfg.set(key, bad, ConfigOrigin::kFlag);
    EXPECT_EQ(st.code(), Errc::kInvalidArgument) << key << "=" << bad;
    EXPECT_NE(st.message().find(why), std::string::npos) << st.message();
  }
  ASSERT_TRUE(cfg.set("udp_dscp", "46", ConfigOrigin::kEnv));
  ASSERT_TRUE(cfg.set("udp_priority", "6", ConfigOrigin::kEnv));
  EXPECT_EQ(cfg.value().dscp, 46u);
  EXPECT_EQ(cfg.value().priority, 6u);
}

}  // namespace ibbcast
