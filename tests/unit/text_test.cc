// src/text: UTF-8 cuts and printable text, names, sizes and durations, host:port addresses.
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "gtest/gtest.h"
#include "text/host_port.h"
#include "text/names.h"
#include "text/units.h"
#include "text/utf8.h"

namespace idlepool::text {
namespace {

// UTF-8 helpers. (A hex escape runs on through hex digits: "\xC3(" is two bytes, "\xAFab" one.)

TEST(Utf8, IsValidUtf8AcceptsWellFormedText) {
  for (std::string_view ok : {
           std::string_view(""), std::string_view("plain ascii"),
           std::string_view("a\0b", 3),           // U+0000 is valid UTF-8
           std::string_view("caf\xC3\xA9"),       // é, 2 bytes
           std::string_view("\xE2\x82\xAC"),      // €, 3 bytes
           std::string_view("\xF0\x9F\x98\x80"),  // 😀, 4 bytes
           std::string_view("\xED\x9F\xBF"),      // U+D7FF, just below the surrogates
           std::string_view("\xEE\x80\x80"),      // U+E000, just above them
           std::string_view("\xF4\x8F\xBF\xBF"),  // U+10FFFF, the last code point
       }) {
    EXPECT_TRUE(IsValidUtf8(ok)) << ::testing::PrintToString(std::string(ok));
  }
}

TEST(Utf8, IsValidUtf8RefusesMalformedText) {
  for (std::string_view bad : {
           std::string_view("\x80"),              // continuation byte with no lead
           std::string_view("a\xC3"),             // truncated 2-byte sequence
           std::string_view("\xC3("),             // lead byte, then no continuation
           std::string_view("\xE2\x82"),          // truncated 3-byte sequence
           std::string_view("\xE2(\xA1"),         // bad second byte
           std::string_view("\xF0\x9F\x98x"),     // bad fourth byte
           std::string_view("\xC0\xAF"),          // overlong '/'
           std::string_view("\xC1\xBF"),          // overlong
           std::string_view("\xE0\x80\xAF"),      // overlong '/' in 3 bytes
           std::string_view("\xF0\x80\x80\xAF"),  // overlong '/' in 4 bytes
           std::string_view("\xED\xA0\x80"),      // U+D800, a surrogate
           std::string_view("\xED\xBF\xBF"),      // U+DFFF, a surrogate
           std::string_view("\xF4\x90\x80\x80"),  // U+110000, past the last code point
           std::string_view("\xF5\x80\x80\x80"),  // lead byte past U+10FFFF
           std::string_view("\xFF"), std::string_view("\xFE"),
           std::string_view("caf\xE9"),  // Latin-1 é
       }) {
    EXPECT_FALSE(IsValidUtf8(bad)) << ::testing::PrintToString(std::string(bad));
  }
}

TEST(Utf8, TruncateUtf8NeverSplitsACharacter) {
  EXPECT_EQ(TruncateUtf8("abc", 10), "abc");
  EXPECT_EQ(TruncateUtf8("abc", 3), "abc");
  EXPECT_EQ(TruncateUtf8("abc", 2), "ab");
  EXPECT_EQ(TruncateUtf8("abc", 0), "");
  EXPECT_EQ(TruncateUtf8("", 5), "");
  // A 2-byte character split by the limit is dropped whole.
  EXPECT_EQ(TruncateUtf8("a\xC3\xA9", 2), "a");
  EXPECT_EQ(TruncateUtf8("a\xC3\xA9", 3), "a\xC3\xA9");
  // A 4-byte character: all or nothing.
  const std::string emoji = "x\xF0\x9F\x98\x80y";
  EXPECT_EQ(TruncateUtf8(emoji, 1), "x");
  EXPECT_EQ(TruncateUtf8(emoji, 2), "x");
  EXPECT_EQ(TruncateUtf8(emoji, 4), "x");
  EXPECT_EQ(TruncateUtf8(emoji, 5), "x\xF0\x9F\x98\x80");
  EXPECT_EQ(TruncateUtf8(emoji, 6), emoji);
}

TEST(Utf8, TruncateUtf8ReplacesEachInvalidByteWithAQuestionMark) {
  EXPECT_EQ(TruncateUtf8("a\xC3(b", 10), "a?(b");  // invalid continuation byte
  EXPECT_EQ(TruncateUtf8("a\xC3(b", 2), "a?");
  EXPECT_EQ(TruncateUtf8("\x80\x80", 10), "??");            // stray continuation bytes
  EXPECT_EQ(TruncateUtf8("\xC0\xAF", 10), "??");            // overlong
  EXPECT_EQ(TruncateUtf8("\xED\xA0\x80", 10), "???");       // surrogate
  EXPECT_EQ(TruncateUtf8("\xF4\x90\x80\x80", 10), "????");  // past U+10FFFF
  EXPECT_EQ(TruncateUtf8("ab\xE2\x82", 10), "ab??");        // truncated at the end
  EXPECT_EQ(TruncateUtf8("caf\xE9 \xC3\xA9t\xC3\xA9", 100), "caf? \xC3\xA9t\xC3\xA9");
  // Replacement first, then the cut: "?" counts one byte like the byte it replaces.
  EXPECT_EQ(TruncateUtf8("\xFF\xC3\xA9", 2), "?");
  EXPECT_EQ(TruncateUtf8("\xFF\xC3\xA9", 3), "?\xC3\xA9");
  for (std::string_view s : {"\xC0\xAFxyz", "x\xF0\x9F\x98", "\xED\xA0\x80\xE2\x82\xAC"}) {
    for (size_t n = 0; n <= s.size() + 1; ++n) {
      const std::string t = TruncateUtf8(s, n);
      EXPECT_TRUE(IsValidUtf8(t)) << ::testing::PrintToString(t);
      EXPECT_LE(t.size(), n);
    }
  }
}

TEST(Utf8, PrintableTextKeepsTextAndReplacesControls) {
  EXPECT_TRUE(IsPrintableUtf8("laptop-1 ünïcode ✓"));
  EXPECT_FALSE(IsPrintableUtf8("w3\x1b]0;PWNED\a"));
  EXPECT_FALSE(IsPrintableUtf8("a\nb"));
  EXPECT_FALSE(
      IsPrintableUtf8("\xC2\x9B"
                      "31m"));  // C1 CSI
  EXPECT_FALSE(IsPrintableUtf8("\x7F"));
  EXPECT_FALSE(IsPrintableUtf8("\xFF"));
  EXPECT_EQ(PrintableText("laptop ✓"), "laptop ✓");
  EXPECT_EQ(PrintableText("w3\x1b]0;PWNED\a\x1b[2J"), "w3?]0;PWNED??[2J");
  EXPECT_EQ(PrintableText("\xC2\x9B"
                          "31mred\xFF"),
            "?31mred?");
  EXPECT_EQ(PrintableText("line 1\n\tline 2\r\n", /*keep_newlines=*/true), "line 1\n line 2?\n");
  EXPECT_EQ(PrintableText("line 1\nline 2"), "line 1?line 2");
}

TEST(Utf8, PrintableTextReplacesBidiControlsThatReorderTheLine) {
  // "wa" + U+202E (right-to-left override) + "txt.exe": a bidi terminal draws it backwards.
  EXPECT_FALSE(IsPrintableUtf8("wa\u202Etxt.exe"));
  EXPECT_FALSE(IsPrintableUtf8("a\u2066b"));  // left-to-right isolate
  EXPECT_EQ(PrintableText("wa\u202Etxt.exe"), "wa?txt.exe");
  EXPECT_EQ(PrintableText("\u2067x\u2069"), "?x?");
  // Free text keeps the characters that scripts and emoji need (zero width joiner, marks).
  EXPECT_TRUE(IsPrintableUtf8("\u0645\u200C\u0627 \U0001F469\u200D\U0001F4BB e\u0301"));
}

TEST(Names, OrdinaryNamesInAnyScriptAreAllowed) {
  for (const char* name : {"wa", "laptop-1", "render box 2", "ünïcode ✓", "e\u0301t\u00E9",
                           "\u0645\u062D\u0637\u0629", "\u8A08\u7B97\u6A5F", "a\\b"}) {
    EXPECT_EQ(NameProblem(name), "") << name;
    EXPECT_EQ(VisibleText(name).find("\\u"), std::string::npos) << name;
  }
}

TEST(Names, InvisibleAndDirectionChangingCharactersAreRefusedByCodePoint) {
  EXPECT_EQ(NameProblem("wa\u200B"), "U+200B (zero width space) is not allowed");
  EXPECT_EQ(NameProblem("w\u202Ea"), "U+202E (right-to-left override) is not allowed");
  EXPECT_EQ(NameProblem("\uFEFFwa"), "U+FEFF (zero width no-break space) is not allowed");
  EXPECT_EQ(NameProblem("wa\u00AD"), "U+00AD (soft hyphen) is not allowed");
  EXPECT_EQ(NameProblem("w\u180Ea"), "U+180E (Mongolian vowel separator) is not allowed");
  EXPECT_EQ(NameProblem("w\U000E0041"), "U+E0041 (tag character) is not allowed");
  EXPECT_EQ(NameProblem("w\x1b[2J"), "U+001B (control character) is not allowed");
  EXPECT_EQ(NameProblem("w\xC2\x9B"), "U+009B (control character) is not allowed");
  // Every code point of the ranges the issue names, one by one.
  const std::pair<char32_t, char32_t> ranges[] = {
      {0x200B, 0x200F}, {0x202A, 0x202E}, {0x2060, 0x2064}, {0x2066, 0x2069}, {0xFEFF, 0xFEFF},
      {0x180E, 0x180E}, {0x00AD, 0x00AD}, {0x2028, 0x2029}, {0xFE00, 0xFE0F}, {0x3000, 0x3000}};
  for (const auto& [lo, hi] : ranges) {
    for (char32_t c = lo; c <= hi; ++c) {
      std::string name = "wa";
      // UTF-8 of a BMP code point (all of these are 2 or 3 bytes).
      if (c < 0x800) {
        name += static_cast<char>(0xC0 | (c >> 6));
      } else {
        name += static_cast<char>(0xE0 | (c >> 12));
        name += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      }
      name += static_cast<char>(0x80 | (c & 0x3F));
      EXPECT_NE(NameProblem(name), "") << std::hex << static_cast<uint32_t>(c);
      EXPECT_TRUE(IsPrintableUtf8(VisibleText(name))) << std::hex << static_cast<uint32_t>(c);
    }
  }
}

TEST(Names, ACombiningMarkIsRefusedAtTheStartOnly) {
  EXPECT_EQ(NameProblem("\u0301wa"), "U+0301 (a combining mark) is not allowed at the start");
  EXPECT_NE(NameProblem("\u20DDwa"), "");  // combining enclosing circle (Me)
  EXPECT_NE(NameProblem("\u0903wa"), "");  // Devanagari sign visarga (Mc)
  EXPECT_EQ(NameProblem("we\u0301"), "");  // after a letter it is part of that letter
}

TEST(Names, EmptyBlankEdgesAndBadBytesAreRefused) {
  EXPECT_EQ(NameProblem(""), "must not be empty");
  EXPECT_EQ(NameProblem(" wa"), "a space at the start or at the end is not allowed");
  EXPECT_EQ(NameProblem("wa "), "a space at the start or at the end is not allowed");
  EXPECT_EQ(NameProblem("w\u00A0a"), "U+00A0 (no-break space) is not allowed");
  EXPECT_EQ(NameProblem("w\u2800"), "U+2800 (braille pattern blank) is not allowed");
  EXPECT_EQ(NameProblem("w\u3164"), "U+3164 (Hangul filler) is not allowed");
  EXPECT_EQ(NameProblem("wa\xFF"), "byte 0xFF at offset 2 is not valid UTF-8");
}

TEST(Names, VisibleTextEscapesWhatWouldNotShow) {
  EXPECT_EQ(VisibleText("wa\u200B"), "wa\\u200b");
  EXPECT_EQ(VisibleText("w\u202Ea"), "w\\u202ea");
  EXPECT_EQ(VisibleText("\u0301x\u0301"), "\\u0301x\u0301");
  EXPECT_EQ(VisibleText("w\U000E0041"), "w\\U000e0041");
  EXPECT_EQ(VisibleText("w\x1b]0;x\a"), "w\\u001b]0;x\\u0007");
  EXPECT_EQ(VisibleText("a\xFF"), "a\\xff");
  EXPECT_EQ(VisibleText("a\\u200b"), "a\\\\u200b");  // a typed backslash is not an escape
  EXPECT_EQ(VisibleText("laptop ✓"), "laptop ✓");
}

TEST(Utf8, TailUtf8KeepsTheEndAndNeverSplitsACharacter) {
  EXPECT_EQ(TailUtf8("abc", 10), "abc");
  EXPECT_EQ(TailUtf8("abc", 2), "bc");
  EXPECT_EQ(TailUtf8("abc", 0), "");
  EXPECT_EQ(TailUtf8("\xC3\xA9t\xC3\xA9", 2), "\xC3\xA9");
  EXPECT_EQ(TailUtf8("\xC3\xA9t\xC3\xA9", 4), "t\xC3\xA9");  // starts after the cut 'é'
  EXPECT_EQ(TailUtf8("ab\xFF"
                     "cd",
                     3),
            "?cd");  // invalid bytes replaced
}

TEST(ParseDuration, AcceptsWholeNumbersWithUnits) {
  EXPECT_EQ(*ParseDuration("0"), std::chrono::milliseconds(0));
  EXPECT_EQ(*ParseDuration("90"), std::chrono::milliseconds(90000));
  EXPECT_EQ(*ParseDuration("500ms"), std::chrono::milliseconds(500));
  EXPECT_EQ(*ParseDuration("30s"), std::chrono::milliseconds(30000));
  EXPECT_EQ(*ParseDuration("10m"), std::chrono::milliseconds(600000));
  EXPECT_EQ(*ParseDuration("2h"), std::chrono::milliseconds(7200000));
  EXPECT_EQ(*ParseDuration("1d"), std::chrono::milliseconds(86400000));
}

TEST(ParseDuration, RefusesAnythingElse) {
  for (const char* bad : {"", "m", "-5s", "1.5h", "10 m", "10parsecs", "9999999999s"}) {
    auto d = ParseDuration(bad);
    EXPECT_FALSE(d.ok()) << bad;
    if (!d.ok()) EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
  }
}

TEST(ParseByteSizeTest, AcceptsUnitsAndRefusesNonsense) {
  EXPECT_EQ(*ParseByteSize("1048576"), 1048576u);
  EXPECT_EQ(*ParseByteSize("512M"), uint64_t{512} << 20);
  EXPECT_EQ(*ParseByteSize("10G"), uint64_t{10} << 30);
  EXPECT_EQ(*ParseByteSize("1.5GiB"), uint64_t{3} << 29);
  EXPECT_EQ(*ParseByteSize("2kb"), 2048u);
  EXPECT_EQ(*ParseByteSize("1T"), uint64_t{1} << 40);
  for (const char* bad : {"", "G", "-1G", "1.2.3G", "10X", "0", "0.0001K", "1.5", "ten",
                          "99999999999999999999G", "1 G"}) {
    EXPECT_FALSE(ParseByteSize(bad).ok()) << bad;
  }
}

TEST(HostPort, SplitsNamesIpv4AndBracketedIpv6) {
  auto a = SplitHostPort("laptop.local:7878");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->host, "laptop.local");
  EXPECT_EQ(a->port, 7878);
  auto b = SplitHostPort("[::1]:0");
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->host, "::1");
  EXPECT_EQ(b->port, 0);
  auto c = SplitHostPort("7879", "127.0.0.1");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->host, "127.0.0.1");
  EXPECT_EQ(c->port, 7879);
}

TEST(HostPort, RefusesWhatIsNotAnAddress) {
  for (const char* bad : {"", "7878", ":7878", "host:", "host:65536", "host:-1", "host:7x",
                          "::1:80", "unix:/tmp/s", "a b:1", "user@host:22", "host:123456"}) {
    auto r = SplitHostPort(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
      EXPECT_NE(r.status().message().find("is not HOST:PORT"), std::string_view::npos);
    }
  }
  EXPECT_FALSE(SplitHostPort("", "127.0.0.1").ok());
}

TEST(HostPort, JoinsWithBracketsForIpv6) {
  EXPECT_EQ(JoinHostPort("10.0.0.2", 80), "10.0.0.2:80");
  EXPECT_EQ(JoinHostPort("::1", 7878), "[::1]:7878");
  EXPECT_TRUE(IsWildcardHost("0.0.0.0"));
  EXPECT_TRUE(IsWildcardHost("::"));
  EXPECT_TRUE(IsWildcardHost(""));
  EXPECT_FALSE(IsWildcardHost("127.0.0.1"));
}

TEST(ParseRate, AcceptsRequestsPerSecondMinuteHour) {
  EXPECT_DOUBLE_EQ(*ParseRate("10"), 10.0);
  EXPECT_DOUBLE_EQ(*ParseRate("10/s"), 10.0);
  EXPECT_DOUBLE_EQ(*ParseRate("0.5/s"), 0.5);
  EXPECT_DOUBLE_EQ(*ParseRate("30/m"), 0.5);
  EXPECT_DOUBLE_EQ(*ParseRate("120/min"), 2.0);
  EXPECT_DOUBLE_EQ(*ParseRate("3600/h"), 1.0);
  EXPECT_DOUBLE_EQ(*ParseRate("0"), 0.0);
}

TEST(ParseRate, RefusesWhatIsNotARate) {
  for (const char* bad : {"", "/s", "-1/s", "10/d", "1e3", "ten", "1..2", ".", "10/", "nan"}) {
    auto r = ParseRate(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("is not a rate"), std::string::npos) << bad;
  }
}

}  // namespace
}  // namespace idlepool::text
