#include "sim/memory/data.h"

#include <algorithm>
#include <cmath>
#include <span>
#include <type_traits>

#include "absl/base/attributes.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "dispatch/stable_hash.h"
#include "kernels/protocol/lamport.h"
#include "sim/memory/element_loops.h"

namespace lockstep {
namespace {

namespace proto = ::lockstep::protocol;

// Runs `body(E)` with E the element type as a compile-time constant
// (std::integral_constant), so that per-element loops inside it convert
// without a switch per element and vectorise.
template <class Body>
decltype(auto) WithElem(proto::Elem e, Body&& body) {
  switch (e) {
    case proto::Elem::kBf16:
      return body(std::integral_constant<proto::Elem, proto::Elem::kBf16>{});
    case proto::Elem::kFp16:
      return body(std::integral_constant<proto::Elem, proto::Elem::kFp16>{});
    case proto::Elem::kFp32:
      break;
  }
  return body(std::integral_constant<proto::Elem, proto::Elem::kFp32>{});
}

// A digest of element bits: four independent StableHasher lanes, each over
// every fourth pair of elements, then combined, so that a pass over a large
// tensor is not one chain of dependent multiplies (numeric mode digests every
// input and every checked output).
uint64_t DigestBits(std::span<const uint32_t> bits) {
  // Elements in pairs, one 64-bit word each, through StableHash's lanes.
  uint64_t lane[4] = {1, 2, 3, 4};
  const size_t n = bits.size();
  AddLanes(
      n / 8, [&](size_t w) { return static_cast<uint64_t>(bits[2 * w]) << 32 | bits[2 * w + 1]; },
      lane);
  StableHasher h(n);
  for (size_t i = n / 8 * 8; i < n; ++i) h.Add(bits[i]);
  for (uint64_t l : lane) h.Add(l);
  return h.digest();
}

uint8_t ScanFlags(std::span<const uint32_t> bits, proto::Elem e) {
  // The element type's masks once, then a branch-free pass the compiler can
  // vectorise: a −0, and a negative subnormal (sign set, exponent zero,
  // mantissa not zero: proto::IsSubnormalBits).
  const uint32_t neg_zero = proto::NegZeroBits(e), sign = proto::SignBit(e);
  const uint32_t exponent = proto::ExponentMask(e);
  uint32_t any_neg_zero = 0, any_neg_subnormal = 0;
  for (uint32_t b : bits) {
    const uint32_t magnitude = b & ~sign;
    any_neg_zero |= static_cast<uint32_t>(b == neg_zero);
    any_neg_subnormal |=
        static_cast<uint32_t>((b & sign) != 0 && magnitude != 0 && (magnitude & exponent) == 0);
  }
  return static_cast<uint8_t>((any_neg_zero != 0 ? kHasNegZero : 0) |
                              (any_neg_subnormal != 0 ? kHasNegSubnormal : 0));
}

// Smallest negative subnormal of `e` with a few mantissa bits set.
uint32_t NegativeSubnormal(proto::Elem e) { return proto::SignBit(e) | 0x3u; }

// The bits of `v`'s kept elements from its element x on (x itself if kept,
// else the first kept one after it; numeric mode).
const uint32_t* KeptBits(const SimContext& ctx, const SimValue& v, int64_t x) {
  return v.numeric->bits.data() + (ctx.sampler.Rank(x - v.numeric_base) - v.numeric->first);
}

}  // namespace

namespace {

// The kept elements of [first, end) of (rank, instance)'s numeric input,
// nothing injected: element i is a pure function of the seed, the
// contribution and i.
std::vector<uint32_t> NumericElements(const SimContext& ctx, int rank, uint64_t instance,
                                      int64_t first, int64_t end) {
  std::vector<uint32_t> bits(static_cast<size_t>(ctx.sampler.Count(first, end)));
  StableHasher base(ctx.seed);
  base.Add(static_cast<uint64_t>(rank)).Add(instance);
  const uint64_t digest = base.digest();
  const auto stream = static_cast<uint32_t>(digest ^ (digest >> 32));
  FillElements(BestElementIsa(), ctx.elem, ctx.sampler, stream, first, end, bits.data());
  return bits;
}

}  // namespace

std::vector<uint32_t> NumericInput(const SimContext& ctx, int rank, uint64_t instance,
                                   int64_t elems, const InputInjection& injected) {
  std::vector<uint32_t> bits = NumericElements(ctx, rank, instance, 0, elems);
  // Injected element classes land at fixed, seed-independent places of
  // their range: its first kept element and its middle one (numeric data:
  // the range's first element and element n / 2; sampled data keeps both
  // inside the range, so that the classes are carried).
  const int64_t first = std::min(injected.first, elems);
  const int64_t n = injected.elems < 0 ? elems - first : std::min(injected.elems, elems - first);
  const int64_t base = ctx.sampler.Rank(first);  // entry of the range's first kept element
  const int64_t kept = ctx.sampler.Count(first, first + n);
  if ((injected.flags & kHasNegZero) != 0 && kept > 0) {
    bits[static_cast<size_t>(base)] = proto::NegZeroBits(ctx.elem);
  }
  if ((injected.flags & kHasNegSubnormal) != 0 && kept > 1) {
    bits[static_cast<size_t>(base + kept / 2)] = NegativeSubnormal(ctx.elem);
  }
  return bits;
}

namespace {

// (rank, instance)'s contribution as a value holding `bits`, the kept
// elements from element `first` on (numeric mode).
SimValue NumericContribution(SimContext& ctx, int rank, uint64_t instance,
                             std::vector<uint32_t> bits, int64_t first) {
  SimValue v;
  v.key_sum = ContributionKey(rank, instance);
  v.count = 1;
  if (ctx.exact) v.exact = ctx.sets.Singleton(rank, instance);
  v.flags = ScanFlags(bits, ctx.elem);
  v.bits = DigestBits(bits);
  v.numeric = ctx.numeric.Add(std::move(bits), ctx.sampler.Rank(first));
  return v;
}

// Rank `rank`'s contribution at call instance `instance`, symbolically.
SimValue SymbolicContribution(SimContext& ctx, int rank, uint64_t instance) {
  SimValue v;
  v.key_sum = ContributionKey(rank, instance);
  v.count = 1;
  v.bits = v.key_sum;
  if (ctx.exact) v.exact = ctx.sets.Singleton(rank, instance);
  return v;
}

// A symbolic input with nothing injected: one run over the whole tensor.
// (Its own function, so that the tensor is built in the caller's return
// slot: beside MakeInput's other return it was moved out and destroyed.)
SimTensor WholeSymbolicInput(SimContext& ctx, int rank, uint64_t instance, int64_t elems) {
  SimTensor t;
  t.elems = elems;
  t.runs.Write(Run{0, elems, SymbolicContribution(ctx, rank, instance), 0, ctx.Clock(rank), rank});
  return t;
}

}  // namespace

SimTensor MakeInput(SimContext& ctx, int rank, uint64_t instance, int64_t elems) {
  // The usual input, without the frame the injected and numeric cases need
  // (this runs in every rank-call).
  if (!ctx.numeric_mode) return WholeSymbolicInput(ctx, rank, instance, elems);
  return MakeInput(ctx, rank, instance, elems, InputInjection{});
}

SimTensor MakeInput(SimContext& ctx, int rank, uint64_t instance, int64_t elems,
                    const InputInjection& injected) {
  SimTensor t;
  t.elems = elems;
  SimValue v = SymbolicContribution(ctx, rank, instance);
  // The injected range, within the input (empty: nothing injected).
  const int64_t first = std::min(injected.first, elems);
  const int64_t end = injected.elems < 0 ? elems : std::min(elems, first + injected.elems);
  const uint8_t flags = first < end ? injected.flags : uint8_t{0};
  if (ctx.numeric_mode) {
    if (flags != 0) ctx.injected_inputs[{rank, instance}] = injected;
    v = NumericContribution(ctx, rank, instance, NumericInput(ctx, rank, instance, elems, injected),
                            0);
    // Kept for the reference the checks build from every contribution.
    ctx.latest_inputs[static_cast<size_t>(rank)] = {instance, elems, v.numeric};
    t.runs.Write(Run{0, elems, v, 0, ctx.Clock(rank), rank});
    return t;
  }
  if (flags == 0 || (first == 0 && end == elems)) {
    v.flags = flags;
    t.runs.Write(Run{0, elems, v, 0, ctx.Clock(rank), rank});
    return t;
  }
  // Only the range carries the injected classes.
  if (first > 0) t.runs.Write(Run{0, first, v, 0, ctx.Clock(rank), rank});
  SimValue in_range = v;
  in_range.flags = flags;
  t.runs.Write(Run{first, end, in_range, first, ctx.Clock(rank), rank});
  if (end < elems) t.runs.Write(Run{end, elems, v, end, ctx.Clock(rank), rank});
  return t;
}

SimTensor MakeInputRange(SimContext& ctx, int rank, uint64_t instance, int64_t elems, int64_t first,
                         int64_t n) {
  const int64_t begin = std::clamp<int64_t>(first, 0, elems);
  const int64_t end = std::clamp<int64_t>(first + n, begin, elems);
  SimTensor t;
  if (ctx.numeric_mode) {
    // Only the range's elements are made (element e still holds the
    // contribution's element e, as the checks regenerate it): a rank's rows
    // of a gathered buffer cost its rows, not the buffer.
    t.elems = elems;
    if (begin < end) {
      t.runs.Write(Run{begin, end,
                       NumericContribution(ctx, rank, instance,
                                           NumericElements(ctx, rank, instance, begin, end), begin),
                       begin, ctx.Clock(rank), rank});
    }
  } else {
    t = MakeInput(ctx, rank, instance, elems);
  }
  // Zeros (no contribution) outside the range.
  if (begin > 0) t.runs.Write(Run{0, begin, SimValue{}, 0, ctx.Clock(rank), rank});
  if (end < elems) t.runs.Write(Run{end, elems, SimValue{}, end, ctx.Clock(rank), rank});
  return t;
}

SimTensor SliceElements(const SimTensor& tensor, int64_t first, int64_t n) {
  SimTensor out;
  out.elems = n;
  out.origin = tensor.origin + first;
  // From the first run that reaches the slice (a gathered tensor holds a run
  // per member: one rank's rows must not cost a scan of every member's).
  const RunList::Runs& runs = tensor.runs.runs();
  for (size_t i = tensor.runs.FirstEndingAfter(first); i < runs.size(); ++i) {
    const Run& run = runs[i];
    if (run.begin >= first + n) break;
    const int64_t begin = std::max(run.begin, first);
    const int64_t end = std::min(run.end, first + n);
    if (begin >= end) continue;
    Run cut = run;
    cut.begin = begin - first;
    cut.end = end - first;
    cut.src = run.src + (begin - run.begin) - first;
    cut.value.numeric_base -= first;
    out.runs.Write(cut);
  }
  return out;
}

SimChunk Rebased(SimChunk chunk, int64_t shift) {
  for (Piece& p : chunk.pieces) {
    p.src -= shift;
    p.value.numeric_base -= shift;
  }
  return chunk;
}

namespace {

// Cuts the segment containing `at` in two there (no-op at a boundary).
void SplitAt(Accumulator& acc, int64_t at) {
  for (size_t i = 0; i < acc.segments.size(); ++i) {
    Accumulator::Segment& seg = acc.segments[i];
    if (seg.begin < at && at < seg.end) {
      Accumulator::Segment tail = seg;
      tail.begin = at;
      seg.end = at;
      acc.segments.insert(acc.segments.begin() + static_cast<std::ptrdiff_t>(i) + 1, tail);
      return;
    }
  }
}

// Adds piece `p`'s elements into `acc`'s at `offset` (numeric mode: the
// kept ones; the first chunk's are stored). Returns false, adding nothing,
// where the piece holds contribution elements whose kept ones are not the
// sum's there (sampled data moved by other than a multiple of the stride:
// layouts disagreed). Out of line: provenance mode's AccumulatorAdd stays
// small.
[[gnu::noinline]] bool AddNumeric(SimContext& ctx, Accumulator& acc, const Piece& p, int64_t offset,
                                  bool first) {
  const SimValue& v = p.value;
  const int64_t to = acc.contribution_begin() + offset;  // the sum's contribution element
  if (!ctx.sampler.Aligned(p.src - v.numeric_base - to)) return false;
  const uint32_t* in = KeptBits(ctx, v, p.src);
  float* sum = acc.values.data() + ctx.sampler.Count(acc.contribution_begin(), to);
  const int64_t n = ctx.sampler.Count(to, to + p.len);
  WithElem(ctx.elem, [&](auto elem) {
    if (first) {
      for (int64_t k = 0; k < n; ++k) sum[k] = proto::ToFloat(in[k], elem);
    } else if (acc.fp32) {
      for (int64_t k = 0; k < n; ++k) sum[k] += proto::ToFloat(in[k], elem);
    } else {
      // Rounded to the element type after every add.
      for (int64_t k = 0; k < n; ++k) {
        sum[k] = proto::ToFloat(proto::FromFloat(sum[k] + proto::ToFloat(in[k], elem), elem), elem);
      }
    }
  });
  return true;
}

}  // namespace

void AccumulatorAddSlow(SimContext& ctx, Accumulator& acc, const SimChunk& chunk) {
  // The first add of AccumulatorAdd's inline case (symbolic data, one piece
  // over the whole chunk): a sum of one segment, then that inline add (what
  // the loops below do for it, without them).
  if (!ctx.numeric_mode && acc.empty && chunk.pieces.size() == 1 && chunk.len > 0 &&
      chunk.pieces.front().len == chunk.len) {
    acc.empty = false;
    acc.len = chunk.len;
    acc.src = chunk.pieces.front().src;
    acc.segments.resize(1);
    acc.segments.front() = Accumulator::Segment{0, chunk.len, SimValue{}};
    AccumulatorAdd(ctx, acc, chunk);
    return;
  }
  const bool first = acc.empty;
  if (first) {
    acc.empty = false;
    acc.len = chunk.len;
    acc.src = chunk.pieces.empty() ? 0 : chunk.pieces.front().src;
    acc.segments.assign(1, Accumulator::Segment{0, chunk.len, SimValue{}});
    if (ctx.numeric_mode) {
      // Where the sum's elements are in the contributions' index space: as
      // its first piece that carries elements says (a zero piece carries
      // none, and says nothing).
      acc.numeric_base = 0;
      int64_t at_piece = 0;
      for (const Piece& p : chunk.pieces) {
        if (p.value.numeric != nullptr) {
          acc.numeric_base = p.value.numeric_base - (p.src - (acc.src + at_piece));
          break;
        }
        at_piece += p.len;
      }
      const int64_t at = acc.contribution_begin();
      acc.values.assign(static_cast<size_t>(ctx.sampler.Count(at, at + chunk.len)), 0.0f);
    }
  }
  if (chunk.pieces.size() > 1) {
    int64_t at = 0;
    for (const Piece& p : chunk.pieces) {
      SplitAt(acc, at);
      at += p.len;
    }
    SplitAt(acc, at);
  }
  int64_t offset = 0;
  for (const Piece& p : chunk.pieces) {
    const SimValue& v = p.value;
    // Numeric mode adds the piece's elements (AddNumeric); sampled data
    // cannot where the piece's kept elements are not the sum's, and the sum
    // is marked as holding other offsets' data (as it does).
    const bool unsampled =
        ctx.numeric_mode && v.numeric != nullptr && !AddNumeric(ctx, acc, p, offset, first);
    const bool shifted = (v.flags & kShifted) != 0 || p.src != acc.src + offset || unsampled;
    for (Accumulator::Segment& seg : acc.segments) {
      if (seg.end <= offset || seg.begin >= offset + p.len) continue;
      AddToSum(ctx, seg.sum, v, acc.fp32, shifted);
    }
    offset += p.len;
  }
  if (offset != chunk.len) {
    for (Accumulator::Segment& seg : acc.segments) seg.sum.flags |= kShifted;  // a gap
  }
}

SimChunk AccumulatorFinish(SimContext& ctx, const Accumulator& acc) {
  SimChunk out;
  NumericArray numeric;
  uint8_t numeric_flags = 0;
  if (ctx.numeric_mode) {
    std::vector<uint32_t> bits(acc.values.size());
    WithElem(ctx.elem, [&](auto elem) {
      for (size_t i = 0; i < bits.size(); ++i) bits[i] = proto::FromFloat(acc.values[i], elem);
    });
    numeric_flags = ScanFlags(bits, ctx.elem);
    numeric = ctx.numeric.Add(std::move(bits), ctx.sampler.Rank(acc.contribution_begin()));
  }
  for (const Accumulator::Segment& seg : acc.segments) {
    SimValue v = seg.sum;
    v.flags &= kShifted;
    if (ctx.numeric_mode) {
      v.flags |= numeric_flags;
      v.numeric = numeric;
      v.numeric_base = acc.numeric_base;
    }
    out.pieces.push_back(Piece{v, acc.src + seg.begin, seg.end - seg.begin});
  }
  out.len = acc.len;
  return out;
}

void SanitizeChunkSlow(SimContext& ctx, SimChunk& chunk) {
  for (Piece& p : chunk.pieces) {
    if ((p.value.flags & kHasNegZero) == 0) continue;
    if (ctx.numeric_mode && p.value.numeric != nullptr) {
      const int64_t at = p.src - p.value.numeric_base;  // contribution element
      std::vector<uint32_t> bits(static_cast<size_t>(ctx.sampler.Count(at, at + p.len)));
      const uint32_t* in = KeptBits(ctx, p.value, p.src);
      for (size_t k = 0; k < bits.size(); ++k) bits[k] = proto::SanitizeBits(in[k], ctx.elem);
      p.value.flags = static_cast<uint8_t>((p.value.flags & kShifted) | ScanFlags(bits, ctx.elem));
      p.value.numeric = ctx.numeric.Add(std::move(bits), ctx.sampler.Rank(at));
    } else {
      p.value.flags = static_cast<uint8_t>(p.value.flags & ~kHasNegZero);
    }
  }
}

void WriteChunk(RunList& runs, int64_t pos, const SimChunk& chunk, int64_t ready_ns, int writer) {
  int64_t at = pos;
  for (const Piece& p : chunk.pieces) {
    runs.Write(Run{at, at + p.len, p.value, p.src, ready_ns, writer});
    at += p.len;
  }
}

std::string RankRanges(std::span<const int> ranks) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    parts.push_back(j == i ? absl::StrFormat("%d", ranks[i])
                           : absl::StrFormat("%d-%d", ranks[i], ranks[j]));
    i = j + 1;
  }
  return absl::StrJoin(parts, ",");
}

uint64_t ReductionChecker::OutputDigest(const SimContext& ctx, const SimTensor& tensor) const {
  StableHasher h;
  for (const Run& r : tensor.runs.runs()) {
    h.Add(r.value.bits ^ (static_cast<uint64_t>(r.begin) << 32) ^ static_cast<uint64_t>(r.end));
    if (ctx.numeric_mode && r.value.numeric != nullptr) {
      const int64_t at = r.src - r.value.numeric_base;  // contribution element
      h.Add(DigestBits(std::span<const uint32_t>(
          KeptBits(ctx, r.value, r.src),
          static_cast<size_t>(ctx.sampler.Count(at, at + (r.end - r.begin))))));
    }
  }
  return h.digest();
}

namespace {

// Names the missing, extra and double-counted contributors (exact mode).
nlohmann::json ExplainContributors(const SimContext& ctx, const SimValue& v,
                                   std::span<const int> expected, uint64_t instance) {
  std::vector<int> missing, extra, doubled, stale;
  std::span<const Contribution> got = ctx.sets.Get(v.exact);
  for (int r : expected) {
    uint32_t n = 0;
    for (const Contribution& c : got) {
      if (c.rank == r && c.instance == instance) n += c.count;
    }
    if (n == 0) missing.push_back(r);
    if (n > 1) doubled.push_back(r);
  }
  for (const Contribution& c : got) {
    const bool member = std::find(expected.begin(), expected.end(), c.rank) != expected.end();
    if (c.instance != instance) {
      stale.push_back(c.rank);
    } else if (!member) {
      extra.push_back(c.rank);
    }
  }
  for (auto* v2 : {&missing, &extra, &doubled, &stale}) {
    std::sort(v2->begin(), v2->end());
    v2->erase(std::unique(v2->begin(), v2->end()), v2->end());
  }
  return nlohmann::json{
      {"missing", missing}, {"extra", extra}, {"double_counted", doubled}, {"stale", stale}};
}

std::string ContributorSummary(const nlohmann::json& c) {
  std::vector<std::string> parts;
  for (const char* key : {"missing", "extra", "double_counted", "stale"}) {
    std::vector<int> ranks = c[key].get<std::vector<int>>();
    if (!ranks.empty()) parts.push_back(absl::StrFormat("%s ranks %s", key, RankRanges(ranks)));
  }
  return absl::StrJoin(parts, "; ");
}

}  // namespace

namespace {

int64_t Now(SimContext& ctx, const ReductionCheck& c) {
  return c.at_ns >= 0 ? c.at_ns : ctx.Clock(c.rank);
}

}  // namespace

namespace {

// The findings of ReductionChecker::Check, out of its frame.
ABSL_ATTRIBUTE_NOINLINE void ReportGap(SimContext& ctx, const ReductionCheck& c,
                                       const SimTensor& tensor) {
  ctx.Report(Finding{Verdict::kMismatch,
                     absl::StrFormat("rank %d %s: output has elements no reduction wrote "
                                     "(first at %d)",
                                     c.rank, c.site.ToString(), tensor.runs.FirstGap(0, c.elems)),
                     {{"site", c.site.ToString()}, {"rank", c.rank}},
                     c.rank,
                     Now(ctx, c),
                     Detector::kCoverage});
}

ABSL_ATTRIBUTE_NOINLINE void ReportShifted(SimContext& ctx, const ReductionCheck& c,
                                           const Run& run) {
  const SimValue& v = run.value;
  std::string why = "ranks disagreed on the message layout";
  nlohmann::json details = {
      {"site", c.site.ToString()}, {"rank", c.rank}, {"elements", {run.begin, run.end}}};
  if (ctx.exact) {
    nlohmann::json who = ExplainContributors(ctx, v, c.expected, c.instance);
    if (!who["stale"].empty()) {
      why = absl::StrFormat(
          "stale ranks %s: an earlier call's data, left in the buffer, read as this call's",
          RankRanges(who["stale"].get<std::vector<int>>()));
    }
    details["contributors"] = std::move(who);
  } else {
    ctx.needs_exact_rerun = true;
  }
  ctx.Report(Finding{Verdict::kMismatch,
                     absl::StrFormat("rank %d %s: elements [%d,%d) hold data written for other "
                                     "offsets: %s",
                                     c.rank, c.site.ToString(), run.begin, run.end, why),
                     std::move(details), c.rank, Now(ctx, c), Detector::kMessageLayout});
}

ABSL_ATTRIBUTE_NOINLINE void ReportWrongPeers(SimContext& ctx, const ReductionCheck& c,
                                              const SimValue& v) {
  nlohmann::json details = {{"site", c.site.ToString()},
                            {"rank", c.rank},
                            {"instance", c.instance},
                            {"expected", c.expected},
                            {"contributions", v.count}};
  std::string who;
  if (ctx.exact) {
    details["contributors"] = ExplainContributors(ctx, v, c.expected, c.instance);
    who = ContributorSummary(details["contributors"]);
  } else {
    ctx.needs_exact_rerun = true;
  }
  ctx.Report(Finding{Verdict::kWrongPeer,
                     absl::StrFormat("rank %d %s: reduced %d contributions, expected ranks %s "
                                     "once each%s%s",
                                     c.rank, c.site.ToString(), v.count, RankRanges(c.expected),
                                     who.empty() ? "" : ": ", who),
                     details, c.rank, Now(ctx, c), Detector::kContributors});
}

ABSL_ATTRIBUTE_NOINLINE void ReportBitwiseDivergence(SimContext& ctx, const ReductionCheck& c,
                                                     int other_rank) {
  ctx.Report(Finding{Verdict::kDivergence,
                     absl::StrFormat("rank %d %s: result differs bitwise from rank %d's, though "
                                     "both reduced ranks %s",
                                     c.rank, c.site.ToString(), other_rank, RankRanges(c.expected)),
                     {{"site", c.site.ToString()}, {"rank", c.rank}, {"other_rank", other_rank}},
                     c.rank,
                     Now(ctx, c),
                     Detector::kBitwiseAgreement});
}

// The sum of the contribution keys of the ranks `c` expects.
uint64_t ExpectedSum(const ReductionCheck& c) {
  uint64_t sum = 0;
  for (int r : c.expected) sum += ContributionKey(r, c.instance);
  return sum;
}

// Whether `tensor` covers `c`'s elements with runs that each hold, at their
// own offsets, exactly the contributions `expected_sum` fingerprints. False:
// a finding was reported. (The findings are made out of line: this runs in
// every rank-call, on a fiber's stack, and their strings and JSON made its
// frame 720 bytes.)
bool ContributionsHold(SimContext& ctx, const ReductionCheck& c, const SimTensor& tensor,
                       uint64_t expected_sum) {
  const auto expected_count = static_cast<uint32_t>(c.expected.size());
  if (!tensor.runs.Covered(0, c.elems)) {
    ReportGap(ctx, c, tensor);
    return false;
  }
  for (const Run& run : tensor.runs.runs()) {
    if (run.begin >= c.elems) break;
    const SimValue& v = run.value;
    if ((v.flags & kShifted) != 0 || run.src != run.begin) {
      // Data at other offsets: ranks laid the message out differently, or an
      // earlier call's data (another instance) was left in the buffer and
      // read as this call's. The exact rerun tells which.
      ReportShifted(ctx, c, run);
      return false;
    }
    if (v.key_sum != expected_sum || v.count != expected_count) {
      ReportWrongPeers(ctx, c, v);
      return false;
    }
  }
  return true;
}

}  // namespace

bool ReductionChecker::Check(SimContext& ctx, const ReductionCheck& c, const SimTensor& tensor) {
  // Every member of the group checks the same (instance, group): the expected
  // fingerprint is computed once, by the first, and dropped after the last.
  const uint64_t key = StableHasher::Mix(c.instance * 0x9e3779b97f4a7c15u ^ c.group_key);
  // Found first, inserted only when absent: all but a group's first member
  // only find (one Insert offering the spare agreement, tried instead, made
  // every member pay Insert's load check: +37 instructions a rank-call).
  uint32_t index = open_.Find(key);
  const bool fresh = index == MixedKeyIndex::kAbsent;
  if (fresh) {
    if (free_.empty()) {
      index = static_cast<uint32_t>(pool_.size());
      pool_.emplace_back();
    } else {
      index = free_.back();
      free_.pop_back();
      Agreement& reused = pool_[index];
      reused.expected_sum = 0;
      reused.firsts.clear();
      reused.references.clear();
      reused.checked = 0;
    }
    open_.Insert(key, index);
  }
  Agreement& agreement = pool_[index];
  if (fresh) agreement.expected_sum = ExpectedSum(c);
  if (!ContributionsHold(ctx, c, tensor, agreement.expected_sum)) return false;
  if (ctx.numeric_mode && !CheckNumeric(ctx, c, tensor, agreement)) return false;

  const uint64_t digest = OutputDigest(ctx, tensor);
  auto first = std::find_if(agreement.firsts.begin(), agreement.firsts.end(),
                            [&](const FirstOutput& f) { return f.origin == c.origin; });
  if (first == agreement.firsts.end()) {
    agreement.firsts.push_back({c.origin, digest, c.rank});
  } else if (first->digest != digest) {
    ReportBitwiseDivergence(ctx, c, first->rank);
    return false;
  }
  if (++agreement.checked == c.expected.size()) {
    free_.push_back(index);
    open_.Erase(key);
  }
  return true;
}

bool ReductionChecker::CheckSame(SimContext& ctx, const ReductionCheck& c, const SimTensor& tensor,
                                 uint32_t times) {
  const uint64_t key = StableHasher::Mix(c.instance * 0x9e3779b97f4a7c15u ^ c.group_key);
  if (!ctx.numeric_mode && times == c.expected.size() &&
      open_.Find(key) == MixedKeyIndex::kAbsent) {
    // The `times` checks are every one the agreement expects, of one
    // tensor: it would open and close here with one output, so nothing is
    // kept, and the contributions are all there is to check. (Symbolic data
    // only: numeric checks keep their reference in the agreement.)
    return ContributionsHold(ctx, c, tensor, ExpectedSum(c));
  }
  for (uint32_t made = 0; made < times;) {
    if (!Check(ctx, c, tensor)) return false;
    ++made;
    // The checks after it pass as it did (the same runs, the same digest)
    // and only count, up to the last member the open agreement expects; a
    // check after that opens the next agreement, and is made.
    const uint32_t index = open_.Find(key);
    if (index == MixedKeyIndex::kAbsent) continue;
    Agreement& agreement = pool_[index];
    const size_t counted = std::min<size_t>(c.expected.size() - agreement.checked, times - made);
    agreement.checked += counted;
    made += static_cast<uint32_t>(counted);
    if (agreement.checked == c.expected.size()) {
      free_.push_back(index);
      open_.Erase(key);
    }
  }
  return true;
}

// Out of Check's frame, as the findings are.
ABSL_ATTRIBUTE_NOINLINE bool ReductionChecker::CheckNumeric(SimContext& ctx,
                                                            const ReductionCheck& c,
                                                            const SimTensor& tensor,
                                                            Agreement& agreement) {
  // Against a double-precision reference: |out - ref| <= n * eps * sum|x| + tiny,
  // on the kept elements (all of them, but in sampled mode).
  const NumericSampler& sampler = ctx.sampler;
  const double eps = ctx.elem == protocol::Elem::kFp32   ? 1.2e-7
                     : ctx.elem == protocol::Elem::kBf16 ? 7.9e-3
                                                         : 9.8e-4;
  // The reference is the same for every member that checks this slice:
  // the first computes it (regenerating every contribution), the others
  // reuse it, so a call costs its group one pass over the inputs, not one
  // per member. Entry k is the kept contribution element of rank
  // Rank(origin) + k.
  auto cached = std::find_if(
      agreement.references.begin(), agreement.references.end(),
      [&](const NumericReference& r) { return r.origin == c.origin && r.elems == c.elems; });
  if (cached == agreement.references.end()) {
    NumericReference computed;
    computed.origin = c.origin;
    computed.elems = c.elems;
    computed.sum.assign(static_cast<size_t>(sampler.Count(c.origin, c.origin + c.elems)), 0.0);
    computed.magnitude.assign(computed.sum.size(), 0.0);
    for (int r : c.expected) {
      const auto injected = ctx.injected_inputs.find({r, c.instance});
      const InputInjection in_injected =
          injected == ctx.injected_inputs.end() ? InputInjection{} : injected->second;
      // The contribution's elements [origin, origin + elems): a slice of a
      // larger input when the checked tensor is (a reduce-scatter's rows).
      // The rank's own input array when it is the same one (its latest,
      // of this length or, with nothing injected, a longer one: the
      // injected elements' places depend on the length); else regenerated.
      const SimContext::LatestInput& latest = ctx.latest_inputs[static_cast<size_t>(r)];
      const int64_t needed = c.origin + c.elems;
      const bool reuse = latest.instance == c.instance && latest.bits != nullptr &&
                         (latest.elems == needed ||
                          (injected == ctx.injected_inputs.end() && latest.elems > needed));
      std::vector<uint32_t> regenerated;
      if (!reuse) regenerated = NumericInput(ctx, r, c.instance, needed, in_injected);
      const uint32_t* in =
          (reuse ? latest.bits->bits : regenerated).data() + sampler.Rank(c.origin);
      AddToReference(BestElementIsa(), ctx.elem, in, computed.sum.size(), computed.sum.data(),
                     computed.magnitude.data());
    }
    agreement.references.push_back(std::move(computed));
    cached = agreement.references.end() - 1;
  }
  const std::vector<double>& ref = cached->sum;
  const std::vector<double>& mag = cached->magnitude;
  const double n_eps = static_cast<double>(c.expected.size()) * eps;
  const int64_t origin_rank = sampler.Rank(c.origin);
  for (const Run& run : tensor.runs.runs()) {
    if (run.value.numeric == nullptr) continue;
    const int64_t end = std::min(run.end, c.elems);
    if (run.begin >= end) continue;
    // The run's elements are contribution elements [at, at + n); the
    // reference's are [origin + begin, ...). Apart (which layouts that
    // agree never make), they are compared place by place, as the kernels'
    // consumer reads them; sampled data has nothing to compare there
    // unless both keep the same places.
    const int64_t at = run.src - run.value.numeric_base;
    if (!sampler.Aligned(at - (c.origin + run.begin))) {
      ctx.Report(Finding{
          Verdict::kMismatch,
          absl::StrFormat("rank %d %s: elements [%d,%d) hold contribution "
                          "elements from %d on, not %d: data written for other "
                          "offsets",
                          c.rank, c.site.ToString(), run.begin, end, at, c.origin + run.begin),
          {{"site", c.site.ToString()}, {"rank", c.rank}, {"elements", {run.begin, end}}},
          c.rank,
          Now(ctx, c),
          Detector::kMessageLayout});
      return false;
    }
    const uint32_t* bits = KeptBits(ctx, run.value, run.src);
    const int64_t k0 = sampler.Rank(c.origin + run.begin) - origin_rank;  // reference entry
    const int64_t n = sampler.Count(c.origin + run.begin, c.origin + end);
    // One pass without an exit (it vectorises), then the first element
    // out of tolerance, if any, is looked for.
    const int64_t outside =
        CountOutside(BestElementIsa(), ctx.elem, bits, n, ref.data() + k0, mag.data() + k0, n_eps);
    if (outside == 0) continue;
    for (int64_t k = 0; k < n; ++k) {
      const double got = static_cast<double>(protocol::ToFloat(bits[k], ctx.elem));
      const auto i = static_cast<size_t>(k0 + k);
      const double want = ref[i];
      const double tol = n_eps * mag[i] + 1e-30;
      if (!(std::fabs(got - want) <= tol)) {
        const int64_t e = sampler.Unrank(origin_rank + k0 + k) - c.origin;
        ctx.Report(Finding{Verdict::kDivergence,
                           absl::StrFormat("rank %d %s: element %d = %.8g, reference %.8g "
                                           "(tolerance %.3g)",
                                           c.rank, c.site.ToString(), e, got, want, tol),
                           {{"site", c.site.ToString()},
                            {"rank", c.rank},
                            {"element", e},
                            {"got", got},
                            {"reference", want}},
                           c.rank,
                           Now(ctx, c),
                           Detector::kNumericTolerance});
        return false;
      }
    }
  }
  return true;
}

}  // namespace lockstep
