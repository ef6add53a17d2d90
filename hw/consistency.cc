#include "hw/consistency.h"

#include <vector>

#include "absl/strings/str_format.h"

namespace lockstep::hw {

std::optional<Finding> CheckDecisionConsistency(MPI_Comm comm, const DecisionRecord& record,
                                                const ParallelLayout& layout, const SiteRef& site,
                                                const std::string& group, int rank,
                                                Clock::time_point deadline) {
  int size = 0;
  MPI_Comm_size(comm, &size);
  std::vector<DecisionRecord> all(static_cast<size_t>(size));
  MPI_Request request;
  MPI_Iallgather(&record, sizeof(DecisionRecord), MPI_BYTE, all.data(), sizeof(DecisionRecord),
                 MPI_BYTE, comm, &request);
  Finding f;
  f.verdict = Verdict::kFailStop;
  f.rank = rank;
  f.at_ns = Clock::now().time_since_epoch().count();
  if (absl::Status s = WaitMpiRequest(&request, deadline, "consistency check over " + group);
      !s.ok()) {
    f.detector = Detector::kBoundedWait;
    f.timed_out = true;
    f.summary = absl::StrFormat("rank %d at %s: %s (its peers are elsewhere in the program)", rank,
                                site.ToString(), s.message());
    f.details = {{"rank", rank}, {"site", site.ToString()}, {"error", s.ToString()}};
    return f;
  }
  const uint64_t fp = DecisionFingerprint(record);
  const auto peers = layout.Peers(record.group);
  for (size_t i = 0; i < all.size(); ++i) {
    if (DecisionFingerprint(all[i]) == fp) continue;
    const std::vector<std::string> diff = DescribeDifferences(record, all[i], &layout);
    const int other = peers[i];
    f.detector = Detector::kDecisionConsistency;
    f.summary = absl::StrFormat(
        "decisions diverged at %s on %s (call %d): rank %d chose %s, rank %d chose %s; first "
        "differing input: %s — stopped before the call could hang",
        site.ToString(), group, record.seq, rank, BackendKindName(record.backend), other,
        BackendKindName(all[i].backend), diff.empty() ? std::string("?") : diff.front());
    f.details = {{"rank", rank},
                 {"peer", other},
                 {"site", site.ToString()},
                 {"group", group},
                 {"seq", record.seq},
                 {"differences", diff},
                 {"mine", ExplainDecision(record, &layout)},
                 {"theirs", ExplainDecision(all[i], &layout)}};
    return f;
  }
  return std::nullopt;
}

}  // namespace lockstep::hw
