#include "sim/report/display_text.h"

#include <algorithm>
#include <cstdint>

#include "absl/strings/str_format.h"
#include "sim/scenario/input_text.h"

namespace lockstep {
namespace {

// Whether a code point acts on a terminal or on the order of what it shows
// rather than showing itself (DisplayText's list).
bool ActsOnTerminal(uint32_t c) {
  return c < 0x20 || c == 0x7f || (c >= 0x80 && c <= 0x9f) || c == 0x061c || c == 0x200e ||
         c == 0x200f || c == 0x2028 || c == 0x2029 || (c >= 0x202a && c <= 0x202e) ||
         (c >= 0x2066 && c <= 0x2069);
}

// The escape DisplayText writes for such a code point.
std::string EscapeOf(uint32_t c) {
  switch (c) {
    case '\t':
      return "\\t";
    case '\n':
      return "\\n";
    case '\r':
      return "\\r";
    default:
      break;
  }
  if (c < 0x80) return absl::StrFormat("\\x%02x", c);
  return absl::StrFormat("\\u%04X", c);
}

// DisplayText, keeping line breaks when asked (DisplayLines).
std::string Display(std::string_view text, bool keep_newlines) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const Utf8CodePoint cp = DecodeUtf8At(text, i);
    if (cp.length == 0) {
      absl::StrAppendFormat(&out, "\\x%02x", static_cast<unsigned char>(text[i]));
      ++i;
      continue;
    }
    if (ActsOnTerminal(cp.value) && !(keep_newlines && cp.value == '\n')) {
      out += EscapeOf(cp.value);
    } else {
      out.append(text.substr(i, cp.length));
    }
    i += cp.length;
  }
  return out;
}

}  // namespace

std::string DisplayText(std::string_view text) { return Display(text, /*keep_newlines=*/false); }

std::string DisplayLines(std::string_view text) { return Display(text, /*keep_newlines=*/true); }

size_t DisplayWidth(std::string_view text) {
  const std::string shown = DisplayText(text);
  // Every byte of the escaped text is ASCII or part of a valid sequence:
  // count the bytes that begin a code point.
  return static_cast<size_t>(std::count_if(shown.begin(), shown.end(), [](char ch) {
    return (static_cast<unsigned char>(ch) & 0xc0) != 0x80;
  }));
}

std::string MarkdownCode(std::string_view text) {
  std::string body;
  for (char ch : DisplayText(text)) {
    if (ch == '|') body += '\\';
    body += ch;
  }
  size_t longest = 0;
  size_t run = 0;
  for (char ch : body) {
    run = ch == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  const std::string fence(longest + 1, '`');
  const bool pad = !body.empty() && (body.front() == '`' || body.back() == '`');
  return pad ? fence + " " + body + " " + fence : fence + body + fence;
}

std::string ShellWord(std::string_view word) {
  if (word.empty()) return "''";
  const auto plain = [](char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           std::string_view("_@%+=:,./-").find(ch) != std::string_view::npos;
  };
  if (std::all_of(word.begin(), word.end(), plain)) return std::string(word);
  bool controls = false;  // a character DisplayText would escape
  for (size_t i = 0; i < word.size() && !controls;) {
    const Utf8CodePoint cp = DecodeUtf8At(word, i);
    controls = cp.length == 0 || ActsOnTerminal(cp.value);
    i += cp.length;
  }
  if (!controls) {
    std::string out = "'";
    for (char ch : word) {
      if (ch == '\'') {
        out += "'\\''";
      } else {
        out += ch;
      }
    }
    return out + "'";
  }
  // ANSI-C quoting: printable characters as themselves (' and \ escaped),
  // the bytes of everything DisplayText escapes as \xNN.
  std::string out = "$'";
  for (size_t i = 0; i < word.size();) {
    const Utf8CodePoint cp = DecodeUtf8At(word, i);
    const size_t length = cp.length == 0 ? 1 : cp.length;
    if (cp.length == 0 || ActsOnTerminal(cp.value)) {
      for (size_t k = i; k < i + length; ++k) {
        absl::StrAppendFormat(&out, "\\x%02x", static_cast<unsigned char>(word[k]));
      }
    } else if (word[i] == '\'' || word[i] == '\\') {
      out += '\\';
      out += word[i];
    } else {
      out.append(word.substr(i, length));
    }
    i += length;
  }
  return out + "'";
}

}  // namespace lockstep
