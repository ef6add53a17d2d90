// Outside text as the terminal, a Markdown table and a shell receive it
// (sim/report/display_text.h), and the error stream that renders it
// (cli/terminal_stream.h).

#include "sim/report/display_text.h"

#include <sstream>
#include <string>

#include "cli/terminal_stream.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace lockstep {
namespace {

TEST(DisplayTextTest, PrintableTextIsUnchanged) {
  EXPECT_EQ(DisplayText("tp8-llama3-h200"), "tp8-llama3-h200");
  EXPECT_EQ(DisplayText("caf\xc3\xa9 \xe6\xb5\x8b\xe8\xaf\x95 a\\b"),
            "caf\xc3\xa9 \xe6\xb5\x8b\xe8\xaf\x95 a\\b");
  EXPECT_EQ(DisplayText(""), "");
}

TEST(DisplayTextTest, ControlCharactersShowAsEscapes) {
  EXPECT_EQ(DisplayText("a\x1b[31mred\x1b[0m"), "a\\x1b[31mred\\x1b[0m");
  EXPECT_EQ(DisplayText("a\tb\nc\rd"), "a\\tb\\nc\\rd");
  EXPECT_EQ(DisplayText(std::string("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(DisplayText("\x7f"), "\\x7f");
  // C1 controls (U+009B is CSI on some terminals) and the separators.
  EXPECT_EQ(DisplayText("\xc2\x9b"
                        "2J"),
            "\\u009B2J");
  EXPECT_EQ(DisplayText("\xe2\x80\xa8"), "\\u2028");
}

TEST(DisplayTextTest, BidirectionalFormattingShowsAsEscapes) {
  // "Trojan Source": a right-to-left override makes "abc" read "cba".
  EXPECT_EQ(DisplayText("x\xe2\x80\xae"
                        "abc"),
            "x\\u202Eabc");
  EXPECT_EQ(DisplayText("\xe2\x81\xa6z\xe2\x81\xa9"), "\\u2066z\\u2069");
  EXPECT_EQ(DisplayText("\xe2\x80\x8f"), "\\u200F");
  EXPECT_EQ(DisplayText("\xd8\x9c"), "\\u061C");
  // Neighbours that are ordinary text stay: U+2030 (per mille), U+200D (ZWJ).
  EXPECT_EQ(DisplayText("\xe2\x80\xb0\xe2\x80\x8d"), "\xe2\x80\xb0\xe2\x80\x8d");
}

TEST(DisplayTextTest, BytesThatAreNotUtf8ShowAsEscapes) {
  EXPECT_EQ(DisplayText("a\xff"
                        "b"),
            "a\\xffb");
  EXPECT_EQ(DisplayText("caf\xc3"), "caf\\xc3");                       // truncated
  EXPECT_EQ(DisplayText("\xc0\xaf"), "\\xc0\\xaf");                    // overlong '/'
  EXPECT_EQ(DisplayText("\xed\xa0\x80"), "\\xed\\xa0\\x80");           // surrogate
  EXPECT_EQ(DisplayText("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");  // past U+10FFFF
}

TEST(DisplayTextTest, LinesKeepTheirBreaksOnly) {
  EXPECT_EQ(DisplayLines("one\ntwo\x1b[2J\r\n"), "one\ntwo\\x1b[2J\\r\n");
}

TEST(DisplayTextTest, WidthCountsWhatShows) {
  EXPECT_EQ(DisplayWidth("abc"), 3u);
  EXPECT_EQ(DisplayWidth("caf\xc3\xa9"), 4u);
  EXPECT_EQ(DisplayWidth("a\x1b"), 5u);  // "a\x1b"
}

TEST(MarkdownCodeTest, StaysInOneCell) {
  EXPECT_EQ(MarkdownCode("tp8"), "`tp8`");
  EXPECT_EQ(MarkdownCode("a|b"), "`a\\|b`");
  EXPECT_EQ(MarkdownCode("a`b"), "``a`b``");
  EXPECT_EQ(MarkdownCode("a``b`"), "``` a``b` ```");
  EXPECT_EQ(MarkdownCode("`x"), "`` `x ``");
  EXPECT_EQ(MarkdownCode("red\x1b[31m"), "`red\\x1b[31m`");
}

TEST(ShellWordTest, QuotesOnlyWhatAShellWouldSplitOrExpand) {
  EXPECT_EQ(ShellWord("topologies/scenarios/tp8-llama3-h200.yaml"),
            "topologies/scenarios/tp8-llama3-h200.yaml");
  EXPECT_EQ(ShellWord(""), "''");
  EXPECT_EQ(ShellWord("my scenarios/a.yaml"), "'my scenarios/a.yaml'");
  EXPECT_EQ(ShellWord("$(rm -rf ~).yaml"), "'$(rm -rf ~).yaml'");
  EXPECT_EQ(ShellWord("it's.yaml"), "'it'\\''s.yaml'");
  EXPECT_EQ(ShellWord("caf\xc3\xa9.yaml"), "'caf\xc3\xa9.yaml'");
}

TEST(ShellWordTest, ControlCharactersUseAnsiCQuoting) {
  EXPECT_EQ(ShellWord("a\x1b[2J.yaml"), "$'a\\x1b[2J.yaml'");
  EXPECT_EQ(ShellWord("x\xe2\x80\xae'\\.yaml"), "$'x\\xe2\\x80\\xae\\'\\\\.yaml'");
  EXPECT_EQ(ShellWord("a\xff"), "$'a\\xff'");
}

TEST(TerminalStreamTest, RendersEveryLineAndKeepsTheirOrder) {
  std::ostringstream sink;
  {
    cli::TerminalStream err(sink);
    err << "lockstep: unknown command '\x1b]0;pwned\x07'\n";
    err << "two parts " << 'x' << "\x1b";
    EXPECT_EQ(sink.str(), "lockstep: unknown command '\\x1b]0;pwned\\x07'\n")
        << "a partial line waits for its end";
    err << "\n"
        << "tail without a break";
  }
  EXPECT_EQ(
      sink.str(),
      "lockstep: unknown command '\\x1b]0;pwned\\x07'\ntwo parts x\\x1b\ntail without a break");
}

TEST(TerminalStreamTest, AMultiByteCharacterSplitAcrossWritesIsKept) {
  std::ostringstream sink;
  cli::TerminalStream err(sink);
  err << "caf\xc3";
  err << "\xa9\n";
  EXPECT_EQ(sink.str(), "caf\xc3\xa9\n");
}

TEST(TerminalStreamTest, RawStreamFlushesAndReachesTheSink) {
  std::ostringstream sink;
  cli::TerminalStream err(sink);
  err << "pending";
  cli::RawStream(err) << "\rprogress";
  EXPECT_EQ(sink.str(), "pending\rprogress");
  EXPECT_EQ(&cli::RawStream(sink), &sink);
}

}  // namespace
}  // namespace lockstep
