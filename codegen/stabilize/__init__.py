"""Stage 3, the stabilizer: `Derivatives` -> `StableForms`, each partial's form chosen by
measured accuracy.

`candidates` proposes forms (SymPy variants, the named rules of `rules`, series),
`regimes` splits an arg's range where no single form keeps the promise, `limits`
adds constant pieces at ±inf, and `choose` measures each candidate against the
exact reference (`codegen.judge`) and picks one.
"""

from codegen.stabilize.measuring import equals_exact
from codegen.stabilize.selection import Candidate, Choice, StableForms, choose, stabilize

__all__ = ["Candidate", "Choice", "StableForms", "choose", "equals_exact", "stabilize"]
