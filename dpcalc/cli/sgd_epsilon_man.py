"""The examples and notes of ``dpcalc sgd-epsilon``'s man page and help (:mod:`dpcalc.cli.sgd_epsilon` shows
them; :mod:`dpcalc.devtools` writes the man page from them)."""

MAN_EXAMPLES = [
    (
        "ε of 60 epochs of DP-SGD on 60000 examples, batches of 256, noise multiplier 1.1, δ = 1e-5:",
        "dpcalc sgd-epsilon --noise-multiplier 1.1 --batch-size 256 --dataset-size 60000 --epochs 60 --delta 1e-5",
    ),
    (
        "The per-epoch curve, as CSV:",
        "dpcalc sgd-epsilon --sigma 1.1 --batch-size 256 --dataset-size 60000 --epochs 1:60:1 --delta 1e-5 -f csv",
    ),
    (
        "The same run as the training code sets it: noise std 2.2 on the sum of clipped gradients, clip norm 2:",
        "dpcalc sgd-epsilon --noise-std 2.2 --clip-norm 2 --batch-size 256 --dataset-size 60000 --epochs 60 "
        "--delta 1e-5",
    ),
    (
        "Every accountant side by side (exact RDP, the Abadi et al. closed form):",
        "dpcalc sgd-epsilon --sigma 4 --sample-rate 0.04 --steps 1000 --delta 1e-5 --method all",
    ),
    (
        "δ at ε = 1, 2 and 4 instead (pld: the certified bracket [delta_lower, delta]):",
        "dpcalc sgd-epsilon --sigma 1.1 --sample-rate 0.004267 --steps 14063 --epsilon 1,2,4 --method pld",
    ),
    (
        "The smallest noise multiplier for ε <= 3:",
        "dpcalc sgd-epsilon --target-epsilon 3 --sample-rate 0.004267 --steps 14063 --delta 1e-5",
    ),
    (
        "The same with the tight accountant (certified, less noise):",
        "dpcalc sgd-epsilon --target-epsilon 3 --sample-rate 0.004267 --steps 14063 --delta 1e-5 --method pld",
    ),
    (
        "The largest number of steps within ε <= 2:",
        "dpcalc sgd-epsilon --target-epsilon 2 --sigma 4 --sample-rate 0.04 --delta 1e-5",
    ),
    (
        "The largest number of steps (and whole epochs) within ε <= 3, RDP beside the tight accountant:",
        "dpcalc sgd-epsilon --target-epsilon 3 --sigma 1.1 --batch-size 256 --dataset-size 60000 --delta 1e-5 "
        "--method all",
    ),
    (
        "The largest batch size for 60 epochs within ε <= 3 (leave the batch size out):",
        "dpcalc sgd-epsilon --target-epsilon 3 --sigma 1.1 --dataset-size 60000 --epochs 60 --delta 1e-5 "
        "--method pld",
    ),
    (
        "Fixed-size batches (sampling without replacement), replace-one neighbours:",
        "dpcalc sgd-epsilon --sigma 2 --batch-size 512 --dataset-size 50000 --steps 4900 --delta 1e-5 "
        "--sampling fixed-size --neighbors replace-one",
    ),
    (
        "Shuffled batches: the upper bound a shuffled run may publish, and the lower bound of Chua et al.:",
        "dpcalc sgd-epsilon --sigma 1.1 --batch-size 256 --dataset-size 60000 --epochs 60 --delta 1e-5 "
        "--sampling shuffle",
    ),
    (
        "Poisson batches capped at 300 (a larger batch is cut to a random 300):",
        "dpcalc sgd-epsilon --sigma 1.1 --batch-size 256 --dataset-size 60000 --epochs 60 --delta 1e-5 "
        "--sampling truncated-poisson --max-batch-size 300 --method pld",
    ),
    (
        "Balls-in-bins batches: the deterministic RDP bound, and one epoch by Monte Carlo (95 % confidence):",
        "dpcalc sgd-epsilon --sigma 1.1 --batch-size 256 --dataset-size 60000 --epochs 1 --delta 1e-5 "
        "--sampling balls-in-bins --method mc",
    ),
    (
        "Poisson batches under replace-one neighbours, tight:",
        "dpcalc sgd-epsilon --sigma 1.1 --batch-size 256 --dataset-size 60000 --epochs 60 --delta 1e-5 "
        "--neighbors replace-one --method pld",
    ),
    (
        "Tight accounting with a certified bracket, beside RDP:",
        "dpcalc sgd-epsilon --sigma 1.1 --sample-rate 0.004267 --steps 14063 --delta 1e-5 --method all",
    ),
    (
        "ε by steps for every accountant, drawn to a file:",
        "dpcalc sgd-epsilon --sigma 1.1 --sample-rate 0.004267 --steps 1000:14000:1000 --delta 1e-5 "
        "--method all --plot sgd.png",
    ),
    (
        "The best membership attack's true-positive rate at false-positive rates 1e-5 and 1e-3, every accountant:",
        "dpcalc sgd-epsilon --sigma 1.1 --sample-rate 0.004267 --steps 1000 --fpr 1e-5,1e-3 --method all",
    ),
    (
        "The Rényi curve of a run (no δ needed), and ε from that curve:",
        "dpcalc sgd-epsilon --sigma 1.1 --sample-rate 0.004267 --steps 14063 --rdp-curve -f csv | "
        "dpcalc convert --curve - --delta 1e-5",
    ),
]

MAN_NOTES = """\
rdp: the exact Rényi DP of the Poisson-subsampled Gaussian (Mironov, Talwar and Zhang 2019), at
integer orders by the binomial expansion and at fractional orders by the signed two-sided series or,
where that loses digits, a quadrature with a positive integrand (dp_accounting's absolute-value
series over-reports by up to 27%), times the steps, converted to (ε, δ) by --conversion and
minimised over 225 orders from 1.01 to 10^4 (the best order is the alpha column).  optimal: the
exact per-order conversion of Asoodeh et al. (on the orders around the best order of its closed
form); balle: Balle et al. 2020 / Canonne et al. 2020; mironov: Mironov 2017.

--epsilon E (instead of --delta): δ at ε, the headline (-q prints it, --max-delta judges it).  rdp:
the run's Rényi curve converted at ε (--conversion, minimised over the orders); pld: the certified
bracket [delta_lower, delta] of the composed PLD, the worse direction, delta_estimate inside it
(lower end and estimate only where the bracket is the run's own, as for ε); abadi and bassily: their
closed forms solved for δ (the same (ε, δ) pairs as their ε rows, valid where those are); dp-group:
Vadhan's Lemma 2.2 at ε/K; mc: an upper bound on δ with probability confidence and its estimate;
shuffle: the exact profile of its upper bound's Gaussians.  Not with --target-epsilon, --schedule,
--tuning-runs, --rdp-curve or the risk questions.  (--accountant, the former name of --method, is
still accepted.)

pld: privacy loss distributions of the Poisson-subsampled Gaussian (both directions of the
add/remove pair, the worse reported), composed by FFT: [epsilon_lower, epsilon] is a certified
bracket (pessimistic and optimistic discretisation, truncation and aliasing counted in), so epsilon
is the certified upper end as in every other row; epsilon_estimate, a value inside the bracket, is
not a bound.  Where the rdp bound is already 0 at δ (Poisson sampling: the total variation is at most
δ), the row is the exact [0, 0] without a PLD, and its note says so.  Budget checks and -q read epsilon.  --eps-error sets the
bracket width (default 0.5% of ε).  With --target-epsilon it answers the inverse questions with its
certified upper end: the smallest noise multiplier (about 5% less noise than RDP at typical
settings), the largest number of steps (about 15% more) and the largest sample rate or batch size;
each search starts from the RDP answer and needs a handful of PLD evaluations (interpolating in
log-log, then confirming the neighbouring value), about a second per target.

Heavy work: a sweep, a table of --target-epsilon searches or a Monte Carlo run of any size is
computed, not refused.  Its work is estimated first from measured costs (rdp: a few thousand rows a
second, pld: about 0.2 s a configuration, a search 3 to 100 times one evaluation, mc: its samples);
above about 3 s the estimate is one line on stderr, and a progress bar is shown on a terminal.  The
chunks of a sweep run on every core (--jobs N) or on a dask cluster (--scheduler); the rows are the
same.  --max-seconds S (or DPCALC_MAX_SECONDS) refuses up front, exit 2, work estimated above S.
Only a sweep of more than 10^8 rows is refused by its size.

Sampling and neighbours: --sampling fixed-size uses the Wang, Balle and Kasiviswanathan 2019 bound
for sampling without replacement, an upper bound, under replace-one neighbours.  The noise
multiplier is the noise standard deviation over the clipping norm C: the sensitivity of the clipped
sum is C under add/remove and 2C under replace-one, so replace-one analyses σ/2.  --noise-std S
--clip-norm C gives it as training code sets it: σ = S/C under either relation, S the standard
deviation of the noise added to the sum of the clipped per-example gradients (the caption names the
quotient; noise added after averaging over B examples has standard deviation S/B).  Fixed-size batches
with add/remove are refused: no theorem here covers them.

--sampling poisson --neighbors replace-one: pld composes the pair (1−q)N(0,σ²)+qN(±1,σ²) (as
dp_accounting's REPLACE_ONE does; it also answers --target-epsilon); rdp is an upper bound by
Mironov's weak triangle inequality over the add/remove RDP (loose, about 2-3x the pld ε).  --sampling shuffle (replace-one): batches of B from a random permutation each epoch
(an epoch is floor(N/B) steps): epsilon is the certified upper bound without amplification (each
example in one step per epoch: the exact composition of Gaussians with r = 2/σ), epsilon_lower the
lower bound of Chua et al. 2024 (ICML, arXiv:2403.17673) for the run that releases every step.
Publish epsilon; the Poisson number does not apply to a shuffled run.
--sampling truncated-poisson --max-batch-size B (with --dataset-size N, which counts the example):
Poisson batches cut to a random subset of B when larger.  Revealing whether the other N − 1 examples
alone fill B, a step is Poisson at q (no cut) or, with probability P(Bin(N−1, q) >= B), the
subsampled Gaussian with sensitivity 2 at the rate q̄ of the example in a cut batch (arXiv:2508.15089;
dp_accounting's TruncatedSubsampledGaussianDpEvent): pld composes that mixture, rdp mixes the Rényi
moments.  Both answer --target-epsilon (one search per configuration) and --fpr; --rdp-curve prints the
mixed curve.
--sampling balls-in-bins: every epoch (floor(N/B) steps), each example in one uniformly random batch;
--sampling random-allocation: each example in exactly E = ceil(q·(steps−1)) random steps of the whole
run (the epochs).  Add/remove neighbours; rdp is the Rényi bound of Feldman & Shenfeld 2025
(arXiv:2502.08202) per allocation round, composed over rounds (--rdp-curve prints that curve); pld is
the certified PLD of the rounds (docs/math.md §3.10: the law of a sum of lognormals, bounded in convex
order, every neglected mass and the FFT round-off counted at +∞), an upper bound with no epsilon_lower,
tighter than rdp and at or below Poisson's pld at rate 1/t (noise multipliers from about 0.7 up; δ above
about 10^-11 per epoch of 234 steps, growing with the epoch's length).  Both answer --target-epsilon and
--fpr.
--method mc (balls-in-bins only, never part of all): the Monte Carlo accountant of Chua et al. 2025
(arXiv:2412.16802) — its epsilon holds with probability --confidence over the sampling (columns
confidence and samples; --seed fixes it), an estimate beside it; not a deterministic bound.

abadi: the moments-accountant closed form ε = ρT + sqrt(4ρT log(1/δ)), ρ = q²/((1−q)σ²) (Abadi et
al. 2016, Lemma 3's leading term); asymptotic, and a bound only under σ >= 1, q < 1/(16σ) and
α* − 1 <= σ² log(1/(qσ)): the valid column says whether they hold.

bassily: the noise formula of Bassily, Smith and Thakurta 2014 as in Bellet's 2022 slides, solved
for ε; a reference, valid for ε <= 1.

--epochs E means steps = ceil(E / sample rate).  --target-epsilon solves for the option left out:
the smallest noise multiplier (within a factor 1.0001), the largest number of steps (and the whole
epochs within them), or the largest sample rate (within a factor 1.0001; with --dataset-size, the
largest batch size, and with --epochs the steps follow from it); every answer is one at which ε was
computed and found within the target, and the next value (one step, one batch, a factor 1.0001) was
computed and found above it.  Every accountant answers these questions, pld included.  Solving for
the noise multiplier or the sample rate needs --target-epsilon >= 0.001 (smaller targets are refused:
those searches evaluate ε ever closer to 0, where it is not certified within bounded work).

--tuning-runs KIND:mean=M[,shape=η]: private hyperparameter tuning (Papernot and Steinke 2022): the
whole run is repeated K times, K ~ geometric, poisson, logarithmic or negative-binomial (shape
η > −1, η ≠ 0) with mean M, and the best model released.  rdp only (Thm 2, or Thm 6 for poisson,
applied to the run's curve, then --conversion); pld and abadi rows say it does not apply.  With
--target-epsilon it solves for the noise multiplier only: the smallest σ (within a factor 1.0001)
whose tuned ε is within the target; --rdp-curve refuses it.

--plot FILE draws the headline against the first swept option, one line per accountant (the PLD
bracket shaded; bounds whose conditions fail hollow and dotted).

--rdp-curve prints the rdp accountant's curve instead of ε: T times the per-step Rényi DP at each
order of --alphas (default: the 225 orders ε is minimised over), one curve per configuration, in the
columns of RDP CURVE COLUMNS; --delta and --conversion are not needed and do not change it;
--target-epsilon and the other accountants are refused.  dpcalc convert --curve - reads its CSV as it
is and gives the rdp row's ε: exactly with --conversion balle or mironov; with optimal, equal or
lower (the accountant evaluates the exact conversion on a window of orders around its best one).

--fpr X[,...]: for each false-positive rate α, tpr_upper, a certified upper bound on the
true-positive rate of every membership test at α (docs: compose --fpr): rdp from the profile of the
Rényi curve, pld a certified bracket [tpr_lower, tpr_upper]; with --method all also
clt-asymptotic, the central-limit μ = q·sqrt(T(e^(1/σ²) − 1)) of Dong, Roth and Su 2022 and Bu et
al. 2020 (an approximation, not a bound, never judged), and exact at q = 1 (μ = √T/σ, TPR =
Φ(Φ⁻¹(α) + μ)).  Poisson sampling (either relation), truncated Poisson (one --max-batch-size and
--dataset-size; rdp and pld), balls-in-bins and random allocation (rdp, and pld with tpr_upper only);
replaces --delta; --max-tpr T is its budget check (exit 3)."""


#: The words of the DP-SGD run options (declared in dpcalc.cli.run_options) in sgd-epsilon's help.
