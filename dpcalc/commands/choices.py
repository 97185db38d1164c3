"""The choices the commands offer — methods, accountants, conversions — by name, in the order ``--help``
lists them (and ``--method all`` runs them).

Pure Python: the command line declares its options from these before any command loads (``--help`` and
shell completion import no numpy), and each command reads its own here.
"""

#: The conversions RDP → (ε, δ) of :mod:`dpcalc.engine.conversion.methods`, tightest first: convert's
#: --method, the --conversion of iterate, langevin and odometer.
CONVERSIONS = ("optimal", "asoodeh", "balle", "mironov")

#: odometer's --method: the Rényi filter and odometer (Lécuyer 2021, the default), the μ-GDP filter and its ladder
#: odometer (:mod:`dpcalc.engine.adaptive.gdp`), the (ε, δ) filter and odometer (:mod:`dpcalc.engine.adaptive.approx_dp`).
ODOMETER_METHODS = ("rdp", "gdp", "dp")
#: Why odometer's --method has no PLD, f-DP or PRV accountant (a user asking for one is told so).
NO_ADAPTIVE_PLD = (
    "there is no PLD or f-DP filter or odometer: one that adds up the privacy loss distributions or trade-off "
    "curves of adaptively chosen steps is not valid (Tran, Koskela, Räisä & Honkela 2026, arXiv:2602.06756)"
)

#: sgd-epsilon's --conversion (its rdp accountant converts over a curve's orders: no asoodeh closed form).
SGD_CONVERSIONS = ("optimal", "balle", "mironov")
#: sgd-epsilon's --method (besides "all"): each an entry of
#: :data:`dpcalc.engine.dpsgd.accounting.ACCOUNTANTS`, or pld (:mod:`dpcalc.engine.pld`), or mc (balls-in-bins).
#: rdp-group and dp-group are the generic group routes of --group-size (dpcalc.commands.sgd.group).
SGD_ACCOUNTANTS = ("rdp", "pld", "abadi", "bassily", "mc", "rdp-group", "dp-group")

#: sgd-epsilon's --sampling: the names of the sampler table :data:`dpcalc.engine.samplers.catalogue.CATALOGUE`,
#: in its order (tests/test_sampler_catalogue.py holds them equal).
SGD_SAMPLINGS = (
    "poisson",
    "fixed-size",
    "truncated-poisson",
    "shuffle",
    "balls-in-bins",
    "random-allocation",
)

#: compose's --method (besides "best" and "all"): the entries of :data:`dpcalc.commands.compose.methods.METHODS`.
COMPOSE_METHODS = ("exact", "pld", "rdp", "optimal", "advanced", "basic")

#: iterate's --method (besides "cni", which needs --initial-distance, and "all").
ITERATE_METHODS = ("feldman", "asoodeh", "composition")

#: langevin's --method (besides "all").
LANGEVIN_METHODS = ("dynamics", "lower", "composition")

#: compose's --group-size (and dpcalc.api.compose's group_size): the largest group of one person's examples.
GROUP_SIZE_MAX = 10_000

#: matrix's --method (besides "all"): dpcalc.commands.matrix.params.MATRIX_METHODS.
MATRIX_METHODS = ("gaussian", "bandmf-rdp", "bandmf-pld", "mmcc", "mc")
