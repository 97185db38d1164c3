"""The examples and notes of ``dpcalc odometer``'s man page (:mod:`dpcalc.cli.odometer` shows them;
:mod:`dpcalc.devtools` writes the man page from them)."""

MAN_EXAMPLES = [
    (
        "The odometer of Lécuyer's fine-tuning run (q = 0.01024, σ = 1, 98 steps per epoch) after epochs 6, "
        "20 and 50, with the γ of the paper's figures and the plain RDP ε by Mironov's conversion:",
        "dpcalc odometer --event sgm:q=0.01024,sigma=1,count=588 --event sgm:q=0.01024,sigma=1,count=1372 "
        "--event sgm:q=0.01024,sigma=1,count=2940 --delta 1e-6 --gamma code --alphas code --conversion mironov",
    ),
    (
        "Follow a training log as it grows (columns sample_rate,noise_multiplier,steps):",
        "dpcalc odometer train.csv --follow --delta 1e-6",
    ),
    ("The same from a pipe:", "tail -f train.csv | dpcalc odometer - --delta 1e-6"),
    (
        "A filter: which steps may run within (2, 1e-6)-DP:",
        "dpcalc odometer events.csv --delta 1e-6 --filter 2",
    ),
    (
        "A CI job spends budget from a shared ledger, refused (exit 3) past ε = 8:",
        "dpcalc odometer --ledger privacy.ledger --add gaussian:sigma=20 --delta 1e-6 --max-epsilon 8 -q",
    ),
    (
        "Ask without spending:",
        "dpcalc odometer --ledger privacy.ledger --add gaussian:sigma=20 --check --max-epsilon 8",
    ),
    ("Report the ledger:", "dpcalc odometer --ledger privacy.ledger"),
    (
        "Spend, refused (exit 1) if the ledger no longer extends the head a CI variable kept, and print "
        "the new head to keep:",
        'dpcalc odometer --ledger privacy.ledger --add gaussian:sigma=20 --expect-head "$LEDGER_HEAD" --head',
    ),
    (
        "The same with the head kept in a file (read, checked, then replaced atomically):",
        "dpcalc odometer --ledger privacy.ledger --add gaussian:sigma=20 --head-file privacy.head",
    ),
    (
        "A training run's Rényi curve (from sgd-epsilon --rdp-curve) as one event:",
        "dpcalc odometer --event rdp-curve:file=curve.csv --delta 1e-5",
    ),
    (
        "Draw the spent budget of a ledger (odometer against plain RDP):",
        "dpcalc odometer --ledger privacy.ledger --delta 1e-6 --plot budget.png",
    ),
    (
        "Gaussian queries under μ-GDP: which may run within μ = 1 (a step too large is refused, later "
        "ones that fit still run):",
        "dpcalc odometer queries.csv --method gdp --filter-mu 1",
    ),
    (
        "The same budget given as (2, 1e-6)-DP, and the GDP odometer at δ = 1e-6, valid at any stopping time:",
        "dpcalc odometer queries.csv --method gdp --filter 2 --delta 1e-6; "
        "dpcalc odometer queries.csv --method gdp --delta 1e-6",
    ),
    (
        "(ε, δ) steps within (1, 1e-6)-DP at the rate of advanced composition:",
        "dpcalc odometer --method dp --event dp:epsilon=0.05,delta=1e-9,count=100 --delta 1e-6 --filter 1",
    ),
    (
        "A ledger under μ-GDP (it remembers its accountant; non-Gaussian events are refused):",
        "dpcalc odometer --ledger gdp.ledger --method gdp --add gaussian:sigma=20 --delta 1e-6 --max-epsilon 2",
    ),
]

MAN_NOTES = """\
Lécuyer, "Practical Privacy Filters and Odometers with Rényi Differential Privacy" (2021).
Neighbours: add/remove one (the subsampled Gaussian is Poisson-sampled).

The odometer (Thm 2, Eq. 5) tracks the running RDP sums r(α) over the orders Λ and reports, at any
stopping time, min over α of 2^(f-1) γ(α) + log(2|Λ| f²/δ)/(α − 1), where f is the smallest level
with r(α) <= 2^(f-1) γ(α).  --gamma paper is γ(α) = log(2|Λ|/δ)/(α − 1) (§4.5 of the paper);
--gamma code is 6/(α − 1), what the paper's figures used.

epsilon_rdp is the plain RDP bound by --conversion: valid only for a schedule fixed in advance,
shown for comparison.

--filter EPS: a step runs iff some order stays within its budget.  --filter-rule union (the
default) gives each order δ/|Λ|, which makes the (EPS, δ) guarantee hold unconditionally and lets
the exact DP → RDP conversion set the budgets; --filter-rule paper is the paper's Cor. 1 rule
ε − log(1/δ)/(α − 1), whose proof applies a fixed-order theorem at a data-dependent order.

The ledger is append-only: a header fixing δ, Λ and γ, then one line per event (UTC time,
mechanism, and a checksum chained to the line before: sha256: and the first 16 hex digits, 64 bits,
of a SHA-256).  Appends hold an exclusive flock and are fsync'd (a lock held by another process is
waited for at most 30 seconds, then exit 1); a last line cut short by an interrupted append is
reported and ignored.  --repair removes that line and nothing else; a file that does not begin with
the ledger's header (any other file, or an empty one) is refused with exit 2 and left as it was, as
is a report or --add on a file that is not a ledger.  The ledger's orders are fixed by its header:
a note on a bound at the edge of them is advice for the next ledger.  An edited, inserted, duplicated, reordered
or spliced entry, and a deleted entry that another follows, are refused with exit 1.  The file
alone cannot show that its last entries were removed (a truncated ledger, an older copy restored),
nor that it was replaced whole or rewritten with its checksums recomputed: pin its head.  --head
prints COUNT:SHA256, the number of entries and the SHA-256 of the header and those entries, each
line ending in LF.  --expect-head HEAD (or the head kept in --head-file FILE) refuses with exit 1,
changing nothing, a ledger whose first COUNT entries are not those HEAD pinned: truncated, rolled
back, deleted, replaced or rewritten.  Undetected even so: entries added after the pinned head and
removed again, and a ledger rolled back or deleted together with its head.

--method gdp (μ-GDP; Smith & Thakurta, "Fully Adaptive Composition for Gaussian Differential
Privacy", 2022): every step a Gaussian mechanism, μ = Δ/σ rounded up; a subsampled Gaussian, a
DP-SGD row or another mechanism is refused (use --method rdp).  If Σμ_i² <= μ² on every path, the
interaction is μ-GDP however the steps were chosen.  --filter-mu MU runs a step iff the steps that
ran and it keep Σμ² <= MU² (exact sums; a refused step costs nothing, a later one that fits still
runs); --filter EPS uses the largest μ that is (EPS, δ)-DP.  The odometer is a ladder of such
filters (Lécuyer's Thm 2 argument): rungs μ_j = μ_1·2^((j−1)/2) with δ_j = 6δ/(π² j²), and at the
level j reached epsilon is the exact ε of μ_j-GDP at δ_j.  --odometer-target EPS (default 1) fixes
μ_1 as the largest μ that is (EPS, 6δ/π²)-DP.

--method dp ((ε, δ)-DP; ε-DP is ε²/2-zCDP, Bun & Steinke 2016, Prop. 3.3; filters and odometers at
this rate: Whitehouse, Ramdas, Rogers & Wu, "Fully-Adaptive Composition in Differential Privacy",
2023): every step (ε_i, δ_i)-DP, a dp: spec or a mechanism's pure ε (δ_i = 0); a Gaussian is refused
(give it as dp:epsilon=E,delta=D).  Half of δ bounds the loss's tail, half the steps' Σδ_i.  --filter
EPS runs a step iff √(2 log(2/δ) Σε²) + Σε²/2 <= EPS or Σε <= EPS, and Σδ_i <= δ/2.  The odometer is
Σε²/2 + √(2(Σε² + ρ) log((2/δ)√((Σε² + ρ)/ρ))), or Σε where smaller, and inf once Σδ_i > δ/2;
--odometer-target EPS (default 1) fixes ρ where the rate reaches EPS.

Under gdp and dp a MECHANISM with count=K is K steps, one row each (at most 1,000,000), with their own
columns (GDP AND DP COLUMNS).  mu and epsilon_fixed hold only for a schedule fixed in advance.  A
ledger started with --method gdp or dp has a v2 first line naming it and fixing its odometer; an
earlier dpcalc refuses it.  There is no PLD or f-DP filter: composing privacy-loss distributions (or
trade-off curves) along an adaptive path is invalid in general (Tran, Koskela, Räisä & Honkela 2026,
arXiv:2602.06756).

--plot draws the running odometer ε against the plain RDP ε by step (from EVENTS or a ledger
report), or with --filter the spent budget against the filter's; not with --follow.

Input: EVENTS and the ledger are UTF-8 text; a byte-order mark and CRLF or CR line ends are
accepted.  Bytes that are not UTF-8, a missing or unreadable file, a directory, a line over 1 MiB
or a field over 100,000 characters exit 2 with one line naming the input.  An EVENTS file is
checked whole before the first row is written; standard input, a pipe and --follow are checked
row by row, and an error says how many rows were written before it.  A column the odometer does
not read gets one warning naming it.  The ledger must be a regular file (a FIFO or a device exits
2); a refused first --add creates nothing, and a refused --add prints nothing with -q; -q prints
no notes on orders at the edge.  Ctrl-C ends every mode (--follow included) with exit 130."""
