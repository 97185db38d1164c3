"""What a user hands dpcalc, read the same way everywhere (pure Python; errors name the line or option at fault).

* :mod:`.text`: the one reader of text input (encodings, line ends, sizes, JSON, CSV); :mod:`.opening`: the
  files and standard input it reads, opened (one-line errors);
* :mod:`.spec`: the MECHANISM specs of ``compose`` and ``odometer``; :mod:`.group`: their person-level form;
* :mod:`.curves`: RDP curves from CSV (``--curve``); :mod:`.events`: EVENTS, the rows of an adaptive run;
* :mod:`.dpevent`: DpEvents (dp-accounting's and jax_privacy's description of a run) in and out.
"""
