#include "tracer/format/json_text.h"

#include <gtest/gtest.h>

using namespace ddpscope::trace;

TEST(ParseMicros, KeepsNanosecondDigitsExactly) {
  std::int64_t ns = 0;
  ASSERT_TRUE(parseMicrosToNs("4458676522690.655", ns));
  EXPECT_EQ(ns, 4458676522690655);
  ASSERT_TRUE(parseMicrosToNs("1695835542514261", ns));
  EXPECT_EQ(ns, 1695835542514261000);
  ASSERT_TRUE(parseMicrosToNs("2.5", ns));
  EXPECT_EQ(ns, 2500);
  ASSERT_TRUE(parseMicrosToNs("0.001", ns));
  EXPECT_EQ(ns, 1);
  ASSERT_TRUE(parseMicrosToNs("-3.25", ns));
  EXPECT_EQ(ns, -3250);
  ASSERT_TRUE(parseMicrosToNs("1.0004", ns));  // beyond ns: rounded
  EXPECT_EQ(ns, 1000);
  ASSERT_TRUE(parseMicrosToNs("1.0005", ns));
  EXPECT_EQ(ns, 1001);
  ASSERT_TRUE(parseMicrosToNs("1.5e3", ns));
  EXPECT_EQ(ns, 1500000);
  ASSERT_TRUE(parseMicrosToNs("12 \n", ns));
  EXPECT_EQ(ns, 12000);
}

TEST(ParseMicros, RejectsWhatIsNotAFiniteNumberInRange) {
  std::int64_t ns = 0;
  EXPECT_FALSE(parseMicrosToNs("", ns));
  EXPECT_FALSE(parseMicrosToNs("abc", ns));
  EXPECT_FALSE(parseMicrosToNs("NaN", ns));
  EXPECT_FALSE(parseMicrosToNs("1.", ns));
  EXPECT_FALSE(parseMicrosToNs("99999999999999999999", ns));
  EXPECT_FALSE(parseMicrosToNs("1e400", ns));
  EXPECT_FALSE(parseMicrosToNs("9223372036854775", ns));  // ns would overflow int64
}

TEST(AppendMicros, WritesThreeDecimalsAndRoundTrips) {
  for (std::int64_t ns : {0LL, 1LL, 999LL, 1000LL, 4458676522690655LL, -1LL, -1234567LL}) {
    std::string s;
    appendMicros(s, ns);
    std::int64_t back = 0;
    ASSERT_TRUE(parseMicrosToNs(s, back)) << s;
    EXPECT_EQ(back, ns) << s;
  }
  std::string s;
  appendMicros(s, 4458676522690655);
  EXPECT_EQ(s, "4458676522690.655");
}

TEST(AppendJsonString, EscapesAndReplacesInvalidUtf8) {
  std::string s;
  appendJsonString(s, "a\"b\\c\n\x01");
  EXPECT_EQ(s, "\"a\\\"b\\\\c\\n\\u0001\"");
  s.clear();
  appendJsonString(s, "ok \xC3\xA9 bad \xFF end");
  EXPECT_EQ(s, "\"ok \xC3\xA9 bad \xEF\xBF\xBD end\"");
}

TEST(AppendDouble, TrimsAndWritesNullForNonFinite) {
  std::string s;
  appendDouble(s, 15.609156, 4);
  EXPECT_EQ(s, "15.6092");
  s.clear();
  appendDouble(s, 2.0, 3);
  EXPECT_EQ(s, "2");
  s.clear();
  appendDouble(s, std::numeric_limits<double>::quiet_NaN());
  EXPECT_EQ(s, "null");
}
