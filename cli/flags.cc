#include "cli/flags.h"

#include <charconv>
#include <limits>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "sim/scenario/did_you_mean.h"
#include "sim/scenario/input_text.h"

namespace lockstep::cli {

FlagParser::FlagParser(std::string command) : command_(std::move(command)) {}

void FlagParser::AddInt(std::string name, int* out, std::string help) {
  flags_.push_back({std::move(name), out, std::move(help)});
}
void FlagParser::AddInt64(std::string name, int64_t* out, std::string help) {
  flags_.push_back({std::move(name), out, std::move(help)});
}
void FlagParser::AddUint64(std::string name, uint64_t* out, std::string help) {
  flags_.push_back({std::move(name), out, std::move(help)});
}
void FlagParser::AddBool(std::string name, bool* out, std::string help) {
  flags_.push_back({std::move(name), out, std::move(help)});
}
void FlagParser::AddString(std::string name, std::string* out, std::string help) {
  flags_.push_back({std::move(name), out, std::move(help)});
}
void FlagParser::AddPositional(std::string name, std::string* out, std::string help,
                               bool required) {
  positionals_.push_back({std::move(name), out, std::move(help), required});
}

void FlagParser::AddPositionalList(std::string name, std::vector<std::string>* out,
                                   std::string help) {
  rest_ = PositionalList{std::move(name), out, std::move(help)};
}

FlagParser::Flag* FlagParser::FindFlag(std::string_view name) {
  for (Flag& f : flags_) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

bool FlagParser::WasSet(std::string_view name) const {
  for (const Flag& f : flags_) {
    if (f.name == name) return f.set;
  }
  return false;
}

namespace {

template <typename T>
absl::Status ParseNumber(std::string_view flag, std::string_view value, T* out) {
  T parsed{};
  const char* end = value.data() + value.size();
  auto [ptr, ec] = std::from_chars(value.data(), end, parsed);
  if (value.empty() || ec != std::errc() || ptr != end) {
    return absl::InvalidArgumentError(
        absl::StrFormat("--%s expects an integer%s, got '%s'", flag,
                        std::numeric_limits<T>::is_signed ? "" : " >= 0", value));
  }
  *out = parsed;
  return absl::OkStatus();
}

// Every string argument may reach a JSON report (a path, a policy name), and
// the JSON writer throws on bytes that are not UTF-8 (issue 11).
absl::Status CheckUtf8Argument(std::string_view what, std::string_view value) {
  if (const std::optional<size_t> bad = FirstInvalidUtf8(value)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: %s is not valid UTF-8 (byte %d); lockstep writes its arguments into "
                        "JSON reports: rename the file or use a UTF-8 path",
                        what, QuoteBytes(value), *bad));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status FlagParser::Assign(Flag& flag, std::string_view value) {
  flag.set = true;
  return std::visit(
      [&](auto* out) -> absl::Status {
        using T = std::remove_pointer_t<decltype(out)>;
        if constexpr (std::is_same_v<T, bool>) {
          if (value == "true" || value == "1") {
            *out = true;
          } else if (value == "false" || value == "0") {
            *out = false;
          } else {
            return absl::InvalidArgumentError(
                absl::StrFormat("--%s expects true or false, got '%s'", flag.name, value));
          }
          return absl::OkStatus();
        } else if constexpr (std::is_same_v<T, std::string>) {
          if (absl::Status s = CheckUtf8Argument(absl::StrCat("--", flag.name), value); !s.ok()) {
            return s;
          }
          *out = std::string(value);
          return absl::OkStatus();
        } else {
          return ParseNumber(flag.name, value, out);
        }
      },
      flag.out);
}

absl::Status FlagParser::Parse(std::span<const std::string> args) {
  size_t next_positional = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string_view arg = args[i];
    if (arg == "--help" || arg == "-h") {
      help_requested_ = true;
      return absl::OkStatus();
    }
    if (arg.size() > 2 && arg.substr(0, 2) == "--") {
      std::string_view body = arg.substr(2);
      std::string_view name = body;
      std::optional<std::string_view> inline_value;
      if (size_t eq = body.find('='); eq != std::string_view::npos) {
        name = body.substr(0, eq);
        inline_value = body.substr(eq + 1);
      }
      Flag* flag = FindFlag(name);
      if (flag == nullptr && !inline_value && name.substr(0, 3) == "no-") {
        Flag* negated = FindFlag(name.substr(3));
        if (negated != nullptr && std::holds_alternative<bool*>(negated->out)) {
          if (absl::Status s = Assign(*negated, "false"); !s.ok()) return s;
          continue;
        }
      }
      if (flag == nullptr) {
        std::vector<std::string_view> names;
        for (const Flag& f : flags_) names.push_back(f.name);
        return absl::InvalidArgumentError(absl::StrFormat("unknown flag --%s for '%s'%s", name,
                                                          command_, DidYouMean(name, names)));
      }
      if (inline_value) {
        if (absl::Status s = Assign(*flag, *inline_value); !s.ok()) return s;
      } else if (std::holds_alternative<bool*>(flag->out)) {
        if (absl::Status s = Assign(*flag, "true"); !s.ok()) return s;
      } else {
        if (i + 1 >= args.size()) {
          return absl::InvalidArgumentError(absl::StrFormat("--%s needs a value", name));
        }
        if (absl::Status s = Assign(*flag, args[++i]); !s.ok()) return s;
      }
      continue;
    }
    if (next_positional >= positionals_.size() && rest_) {
      if (absl::Status s = CheckUtf8Argument(rest_->name, arg); !s.ok()) return s;
      rest_->out->emplace_back(arg);
      continue;
    }
    if (next_positional >= positionals_.size()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("unexpected argument '%s' for '%s'", arg, command_));
    }
    if (absl::Status s = CheckUtf8Argument(positionals_[next_positional].name, arg); !s.ok()) {
      return s;
    }
    *positionals_[next_positional++].out = std::string(arg);
  }
  for (size_t p = next_positional; p < positionals_.size(); ++p) {
    if (positionals_[p].required) {
      return absl::InvalidArgumentError(absl::StrCat(
          "'", command_, "' needs ", positionals_[p].name, ": ", positionals_[p].help));
    }
  }
  if (rest_ && rest_->out->empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", command_, "' needs ", rest_->name, ": ", rest_->help));
  }
  return absl::OkStatus();
}

std::string FlagParser::Usage() const {
  std::string text = absl::StrCat("usage: ", command_);
  for (const Positional& p : positionals_) {
    absl::StrAppend(&text, p.required ? " " : " [", p.name, p.required ? "" : "]");
  }
  if (rest_) absl::StrAppend(&text, " ", rest_->name, "...");
  if (!flags_.empty()) absl::StrAppend(&text, " [flags]");
  absl::StrAppend(&text, "\n");
  for (const Positional& p : positionals_) {
    absl::StrAppend(&text, absl::StrFormat("  %-22s %s\n", p.name, p.help));
  }
  if (rest_) absl::StrAppend(&text, absl::StrFormat("  %-22s %s\n", rest_->name, rest_->help));
  for (const Flag& f : flags_) {
    const bool is_bool = std::holds_alternative<bool*>(f.out);
    absl::StrAppend(&text, absl::StrFormat("  --%-20s %s\n",
                                           is_bool ? f.name : absl::StrCat(f.name, " V"), f.help));
  }
  return text;
}

}  // namespace lockstep::cli
