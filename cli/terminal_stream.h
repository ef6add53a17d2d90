// The command line's error stream, made safe for a terminal. Messages quote
// text from outside (a scenario's name, a file name found in a directory
// `explore DIR` lists, an unknown verb): every line written through it
// reaches the real stream as DisplayLines renders it, so an escape sequence
// or a bidirectional override in that text shows as \x1b or \u202E instead of
// acting on the user's terminal.

#ifndef LOCKSTEP_CLI_TERMINAL_STREAM_H_
#define LOCKSTEP_CLI_TERMINAL_STREAM_H_

#include <ostream>
#include <streambuf>
#include <string>

namespace lockstep::cli {

class TerminalStream : public std::ostream {
 public:
  // Writes to `sink`, a line at a time (and whatever is pending on flush).
  explicit TerminalStream(std::ostream& sink);
  ~TerminalStream() override;

  // The stream written to: the progress line, which draws itself with "\r"
  // and holds no outside text, writes there after flushing this one.
  std::ostream& sink() { return buffer_.sink(); }
  const std::ostream& sink() const { return buffer_.sink(); }

 private:
  class Buffer : public std::streambuf {
   public:
    explicit Buffer(std::ostream& sink) : sink_(sink) {}
    std::ostream& sink() { return sink_; }
    const std::ostream& sink() const { return sink_; }
    // Renders and writes what is pending.
    void Emit();

   protected:
    int_type overflow(int_type ch) override;
    std::streamsize xsputn(const char* s, std::streamsize n) override;
    int sync() override;

   private:
    std::ostream& sink_;
    std::string pending_;  // text since the last line break written
  };
  Buffer buffer_;
};

// `err` itself, or the stream under it when it is a TerminalStream.
std::ostream& RawStream(std::ostream& err);

}  // namespace lockstep::cli

#endif  // LOCKSTEP_CLI_TERMINAL_STREAM_H_
