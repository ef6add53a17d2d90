#include "cli/terminal_stream.h"

#include "sim/report/display_text.h"

namespace lockstep::cli {

TerminalStream::TerminalStream(std::ostream& sink) : std::ostream(nullptr), buffer_(sink) {
  rdbuf(&buffer_);
}

TerminalStream::~TerminalStream() { buffer_.Emit(); }

void TerminalStream::Buffer::Emit() {
  if (pending_.empty()) return;
  sink_ << DisplayLines(pending_);
  pending_.clear();
}

TerminalStream::Buffer::int_type TerminalStream::Buffer::overflow(int_type ch) {
  if (traits_type::eq_int_type(ch, traits_type::eof())) return traits_type::not_eof(ch);
  pending_ += traits_type::to_char_type(ch);
  if (ch == '\n') Emit();
  return ch;
}

std::streamsize TerminalStream::Buffer::xsputn(const char* s, std::streamsize n) {
  pending_.append(s, static_cast<size_t>(n));
  // Whole lines go out as they complete; a partial line waits for its end
  // (or a flush), so a multi-byte character is never rendered in halves.
  const size_t last_break = pending_.rfind('\n');
  if (last_break != std::string::npos) {
    std::string rest = pending_.substr(last_break + 1);
    pending_.resize(last_break + 1);
    Emit();
    pending_ = std::move(rest);
  }
  return n;
}

int TerminalStream::Buffer::sync() {
  Emit();
  sink_.flush();
  return sink_ ? 0 : -1;
}

std::ostream& RawStream(std::ostream& err) {
  auto* terminal = dynamic_cast<TerminalStream*>(&err);
  if (terminal == nullptr) return err;
  terminal->flush();
  return terminal->sink();
}

}  // namespace lockstep::cli
