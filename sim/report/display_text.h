// Text from a scenario (its name, its path) as the terminal, a Markdown table
// and a shell receive it. A name may hold any UTF-8 (scenario files may write
// "\e" or "\u202E" in a double-quoted string, and the YAML round trip keeps
// them), but printed raw an escape sequence recolours or clears the user's
// terminal, a bidirectional override reorders what the line appears to say,
// a "|" splits a Markdown table's cell and a space splits a replay command's
// path in two. These render such text visibly and keep every other character.

#ifndef LOCKSTEP_SIM_REPORT_DISPLAY_TEXT_H_
#define LOCKSTEP_SIM_REPORT_DISPLAY_TEXT_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace lockstep {

// `text` with the characters that act on a terminal instead of showing
// written as escapes: C0 controls and DEL as \t, \n, \r or \xNN; C1 controls
// (U+0080..U+009F), the line and paragraph separators and the bidirectional
// formatting characters (U+061C, U+200E, U+200F, U+202A..U+202E,
// U+2066..U+2069) as \uXXXX; a byte that does not begin valid UTF-8 as \xNN.
// Printable text, non-ASCII letters included, is unchanged, so an ordinary
// name prints as itself.
std::string DisplayText(std::string_view text);

// DisplayText, except that "\n" is kept: multi-line messages (a refusal
// with its list of choices) stay multi-line.
std::string DisplayLines(std::string_view text);

// Code points of DisplayText(text): what a column of names pads by, so that
// a multi-byte letter counts once, not once per byte (an East Asian wide
// character, two columns on a terminal, still counts once).
size_t DisplayWidth(std::string_view text);

// `text` as an inline code span that stays inside one cell of a GitHub
// Markdown table: DisplayText, "|" escaped as "\|" (a table splits cells on
// it even inside code), and a backtick fence one longer than the longest run
// of backticks in the text (CommonMark's rule), padded with a space where the
// text begins or ends with a backtick.
std::string MarkdownCode(std::string_view text);

// `word` as one word of a POSIX shell command line, to paste as printed:
// unchanged when it holds only characters no shell treats specially
// (letters, digits and _@%+=:,./-), else single-quoted ('it'\''s'); a word
// holding a character DisplayText would escape is written as $'...' with
// those bytes as \xNN (bash, zsh and ksh read it back byte for byte), so the
// command neither acts on the terminal nor names another file.
std::string ShellWord(std::string_view word);

}  // namespace lockstep

#endif  // LOCKSTEP_SIM_REPORT_DISPLAY_TEXT_H_
