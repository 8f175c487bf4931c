// `sluice replay` with operations (docs/traces.md): request ids, reports,
// refunds and releases on trace lines, each row worked out by hand from
// semantics.md; and every way a line's operation can be malformed.
// The tables are laid out by hand, one row a line:
// clang-format off
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cli_support.hpp"

namespace sluice::cli_replay_ops_test {
namespace {

using test::run_cli;

constexpr const char* header = "request,time,key,cost,allowed,remaining,retry_after,reset_after\n";

TEST(ReplayOperations, AReportChargesPastTheLimitAndTheNextWindowStartsFresh) {
  // Fixed window 3/10 s: one admit, then a report of 5 — the count becomes
  // min(1 + 5, 3) = 3, never denied —, so the next request waits for the
  // window's end at 10, and the window of 10 starts from 0.
  const auto r = run_cli({"replay", "--policy", "fixed-window 3/10s"}, "0 a 1\n1 a 5 report\n2 a 1\n10 a 1\n");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, std::string(header) +
                   "1,0,a,1,yes,2,0,10\n"
                   "2,1,a,5,reported,0,9,9\n"
                   "3,2,a,1,no,0,8,8\n"
                   "4,10,a,1,yes,2,0,10\n");
}

TEST(ReplayOperations, AReportOnTheLogIsHeldAtTheLimitAndLeavesWithItsEntry) {
  // Sliding log 2/10 s: a report of 5 logs min(5, 2) units at 0; they leave
  // the window at 10, not a nanosecond earlier.
  const auto r = run_cli({"replay", "--policy", "sliding-log 2/10s"}, "0 a 5 report\n9.5 a 1\n10 a 1\n");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, std::string(header) +
                   "1,0,a,5,reported,0,10,10\n"
                   "2,9.5,a,1,no,0,0.5,0.5\n"
                   "3,10,a,1,yes,1,0,10\n");
}

TEST(ReplayOperations, ADebtOnATokenBucketClearsAtTheRefillRate) {
  // 100,000 tokens a minute, 20,000 at once (docs/traces.md's example): at
  // 3.9 the bucket holds 2000 - 1 + 1.7 s of refill - 9000 < 0; a request
  // of 1 waits until the debt and one token have refilled.
  const auto r = run_cli({"replay", "--policy", "token-bucket 100000/1m burst=20000"},
                         "0 acme 1 id=req-1\n2.1 acme 18000 report\n2.2 acme 1 id=req-2\n3.9 acme 9000 report\n"
                         "4 acme 1 id=req-3\n");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, std::string(header) +
                   "1,0,acme,1,yes,19999,0,0.0006\n"
                   "2,2.1,acme,18000,reported,2000,0,10.8\n"
                   "3,2.2,acme,1,yes,2165,0,10.7006\n"
                   "4,3.9,acme,9000,reported,0,2.4012,14.4006\n"
                   "5,4,acme,1,no,0,2.3012,14.3006\n");
}

TEST(ReplayOperations, ARepeatedIdReplaysTheFirstDecisionAndChargesNothing) {
  // GCRA 1/1 s: the id's first decision admits; its repeat answers the same
  // figures and charges nothing (the plain request at 0.5 sees one admit, and
  // the one at 1 is admitted); the id on another key is a conflict.
  const auto r = run_cli({"replay", "--policy", "gcra 1/1s"},
                         "0 a 1 id=x\n0.5 a 1 id=x\n0.5 a 1\n0.5 b 1 id=x\n1 a 1\n");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, std::string(header) +
                   "1,0,a,1,yes,0,0,1\n"
                   "2,0.5,a,1,replayed-yes,0,0,1\n"
                   "3,0.5,a,1,no,0,0.5,0.5\n"
                   "4,0.5,b,1,id-conflict,0,never,0\n"
                   "5,1,a,1,yes,0,0,1\n");
}

TEST(ReplayOperations, AReleaseFreesTheNamedDecisionsLeaseOnItsKeyOnce) {
  // concurrency 2 lease=10s: two leases held, the third request waits for
  // the first to expire (at 10); releasing j1 frees one unit at 2 — once —,
  // j2's lease is held on a, not b (where a unit is free); at 12, j2's lease
  // has expired (10) and the one taken at 3 holds until 13.
  const auto r = run_cli({"replay", "--policy", "concurrency 2 lease=10s"},
                         "0 a 1 id=j1\n0 a 1 id=j2\n1 a 1\n2 a 1 release=j1\n2 a 1 release=j1\n3 b 1 release=j2\n"
                         "3 a 1\n12 a 1\n12 a 1 release=nobody\n");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, std::string(header) +
                   "1,0,a,1,yes,1,0,10\n"
                   "2,0,a,1,yes,0,0,10\n"
                   "3,1,a,1,no,0,9,9\n"
                   "4,2,a,1,released,0,0,10\n"
                   "5,2,a,1,not-held,0,0,10\n"
                   "6,3,b,1,not-held,1,0,10\n"
                   "7,3,a,1,yes,0,0,10\n"
                   "8,12,a,1,yes,0,0,10\n"
                   "9,12,a,1,not-held,0,1,10\n");
}

TEST(ReplayOperations, ARefundGivesBackWhatTheNamedDecisionTookOnce) {
  // Fixed window 2/10 s: r1 and r2 fill it; refunding r1 at 2 (still its
  // window) gives its unit back — once —; an unknown id gives nothing; a
  // denial's id (r4) took nothing to give back.
  const auto r = run_cli({"replay", "--policy", "fixed-window 2/10s"},
                         "0 a 1 id=r1\n0 a 1 id=r2\n1 a 1\n2 a 1 refund=r1\n2 a 1 refund=r1\n2 a 1 refund=zz\n"
                         "3 a 1 id=r3\n3 a 1 id=r4\n4 a 1 refund=r4\n");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, std::string(header) +
                   "1,0,a,1,yes,1,0,10\n"
                   "2,0,a,1,yes,0,0,10\n"
                   "3,1,a,1,no,0,9,9\n"
                   "4,2,a,1,refunded,0,0,8\n"
                   "5,2,a,1,already-refunded,0,0,8\n"
                   "6,2,a,1,unknown-id,0,0,8\n"
                   "7,3,a,1,yes,0,0,7\n"
                   "8,3,a,1,no,0,7,7\n"
                   "9,4,a,1,not-refundable,0,6,6\n");
}

TEST(ReplayOperations, JsonRowsOfOperationsNameTheOperationAndItsOutcome) {
  const auto r = run_cli({"replay", "--policy", "fixed-window 3/10s", "--format", "json"}, "0 a 1\n0 a 1 report\n");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out,
            "{\"request\":1,\"time\":0,\"key\":\"a\",\"cost\":1,\"allowed\":true,\"remaining\":2,\"retry_after\":0,"
            "\"reset_after\":10}\n"
            "{\"request\":2,\"time\":0,\"key\":\"a\",\"cost\":1,\"op\":\"report\",\"outcome\":\"reported\","
            "\"allowed\":true,\"remaining\":1,\"retry_after\":0,\"reset_after\":10}\n");
}

TEST(ReplayOperations, AMalformedOperationIsAnErrorNamingItsLine) {
  const std::string long_name(257, 'n');
  const std::string bad_op =
      "' after the cost; a line is TIME [KEY [COST [OP]]], OP one of report, id=NAME, refund=NAME, release=NAME\n";
  struct row { std::string trace, err; };
  const std::vector<row> rows = {
      {"0 a 1 reprot\n", "sluice: trace line 1: unexpected 'reprot" + bad_op},
      {"0 a 1 id=\n", "sluice: trace line 1: 'id=' names no request id (NAME is 1 to 256 bytes)\n"},
      {"0\n0 a 1 id=\n", "sluice: trace line 2: 'id=' names no request id (NAME is 1 to 256 bytes)\n"},
      {"0 a 1 id=" + long_name + "\n",
       "sluice: trace line 1: the request id of 'id=" + std::string(54, 'n') + "...' is longer than 256 bytes\n"},
      {"0 a 1 report extra\n",
       "sluice: trace line 1: unexpected 'extra' after the operation; a line is TIME [KEY [COST [OP]]]\n"},
      {"0 a 1 ID=x\n", "sluice: trace line 1: unexpected 'ID=x" + bad_op},
  };
  for (const auto& [trace, err] : rows) {
    const auto r = run_cli({"replay", "--policy", "gcra 1/1s"}, trace);
    EXPECT_EQ(r.status, 2) << trace;
    EXPECT_EQ(r.err, err) << trace;
  }
  // A name of exactly 256 bytes is one.
  const auto ok = run_cli({"replay", "--policy", "gcra 1/1s"}, "0 a 1 id=" + std::string(256, 'n') + "\n");
  EXPECT_EQ(ok.status, 0) << ok.err;
}

TEST(ReplayOperations, CompareTakesNoOperations) {
  // compare decides one trace under several limiters: a report or refund
  // there has no single meaning, so the fourth field stays an error.
  const auto r = run_cli({"compare", "--policy", "gcra 1/1s", "--policy", "gcra 2/1s"}, "0 a 1 report\n");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "sluice: trace line 1: unexpected 'report' after the cost; a line is TIME [KEY [COST]]\n");
}

}  // namespace
}  // namespace sluice::cli_replay_ops_test
