"""The layer beneath the core: what makes microtensor PyTorch-exact, off the reading path.

The core enters it in named places: `apply` calls `graph.after_op` (views share a version
counter, the pictures' metadata, forward hooks) and `Tensor.backward` hands `backward()` the step
`graph.torch_step` (retained gradients, saved arrays freed or changed in place, backward hooks,
freeing), after `gradient_argument.loss_gradient` checked its argument. `surface/` is each op's
PyTorch surface (argument checks, numbers lifted to torch's dtype, torch's special forms),
installed over the plain Tensor methods that the op files attach. Beneath those: `promotion`
(torch's dtype rules), `dims` (the one dims normaliser), `indexing` (torch's indexing order),
`arguments` (numbers, lists and arrays turned into Tensors), `operands` (an operator's two
sides), `leaves` (a leaf's one AccumulateGrad), `grad_mode` (no_grad's decorator forms),
`protocols` and `tensor_api` (Python's data model, torch's repr, item() and the like),
`versions` (counting writes: `microtensor.writing`), `scalars` (Python numbers wrapped or
checked against a dtype, as torch), `masked_fill_value` (the gradient of a value tensor),
`power`, `erf`, `gelu`, `gelu_float32`, `summation` (sums added as torch's: float16 in
float32, long axes in blocks) and `low_precision` (float16 row ops computed in float32):
numerics that round as torch's.
"""
