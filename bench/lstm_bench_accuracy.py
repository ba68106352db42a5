"""--accuracy: lstmop's and torch.nn.LSTM's errors against float64 on the same 16-bit values.

For each dtype (bfloat16, float16, and float32 with lstmop's fp32_precision "bf16"), one problem
(its weights, input, initial states and output gradient rounded to the dtype) runs through
torch.nn.LSTM in float64 (the reference) and through lstmop.nn.LSTM and torch.nn.LSTM in the
dtype (torch: bfloat16 for the float32-at-bf16 rows; it has no float16 LSTM on the CPU). Each
row: one output or gradient, its error max|x - x64| / max|x64| for both, and lstmop's error over
torch's (the 16-bit issue's targets: at most 1.25 for bfloat16; float16 within 8 * 2^-11)."""
import torch


def _run(module, x, hx, grad_y):
    x = x.clone().requires_grad_()
    hx = tuple(h.clone().requires_grad_() for h in hx)
    y, (h, c) = module(x, hx)
    grads = torch.autograd.grad(y, [x, hx[0], hx[1]] + list(module.parameters()), grad_y)
    names = ["output", "hy", "cy", "d input", "d h0", "d c0"] + [
        "d " + name for name, _ in module.named_parameters()]
    return dict(zip(names, [y, h, c] + list(grads)))


def _error(value, reference):
    scale = reference.abs().max().item()
    return (value.double() - reference).abs().max().item() / (scale if scale > 0 else 1.0)


def accuracy_rows(T=50, B=8, I=64, H=64, layers=2, bidirectional=True, seed=0):
    import lstmop
    rows = []
    for label, dtype, precision in (("bfloat16", torch.bfloat16, "ieee"),
                                    ("float16", torch.float16, "ieee"),
                                    ("float32, lstmop fp32_precision bf16", torch.float32, "bf16")):
        torch.manual_seed(seed)
        base = torch.nn.LSTM(I, H, layers, bidirectional=bidirectional)
        state = {k: v.to(dtype) for k, v in base.state_dict().items()}
        slots = layers * (2 if bidirectional else 1)
        x = torch.randn(T, B, I).to(dtype)
        hx = (torch.randn(slots, B, H).to(dtype), torch.randn(slots, B, H).to(dtype))
        grad_y = torch.randn(T, B, (2 if bidirectional else 1) * H).to(dtype)
        ref_module = torch.nn.LSTM(I, H, layers, bidirectional=bidirectional).double()
        ref_module.load_state_dict({k: v.double() for k, v in state.items()})
        reference = _run(ref_module, x.double(), tuple(h.double() for h in hx), grad_y.double())
        ours = lstmop.nn.LSTM(I, H, layers, bidirectional=bidirectional).to(dtype)
        ours.load_state_dict(state)
        lstmop.set_fp32_precision(precision)
        try:
            mine = _run(ours, x, hx, grad_y)
        finally:
            lstmop.set_fp32_precision("ieee")
        # torch's comparator: its own LSTM in the dtype; for float32 at bf16 precision its
        # bfloat16 LSTM on the same values (the accuracy that precision stands for).
        torch_dtype = torch.bfloat16 if precision == "bf16" else dtype
        theirs_module = torch.nn.LSTM(I, H, layers, bidirectional=bidirectional).to(torch_dtype)
        theirs_module.load_state_dict({k: v.to(torch_dtype) for k, v in state.items()})
        try:
            theirs = _run(theirs_module, x.to(torch_dtype), tuple(h.to(torch_dtype) for h in hx),
                          grad_y.to(torch_dtype))
        except RuntimeError as error:  # torch 1.13 has no float16 LSTM on the CPU
            theirs = None
            reason = str(error).splitlines()[0][:60]
        for name, ref in reference.items():
            ours_err = _error(mine[name], ref)
            torch_err = _error(theirs[name], ref) if theirs is not None else None
            rows.append((label, name, ours_err, torch_err,
                         None if torch_err in (None, 0.0) else ours_err / torch_err,
                         reason if theirs is None else ""))
    return rows


def print_accuracy(log=print, **problem):
    rows = accuracy_rows(**problem)
    log(f"{'dtype':<36} {'tensor':<22} {'lstmop err':>11} {'torch err':>11} {'ratio':>7}")
    worst = {}
    for label, name, ours, theirs, ratio, note in rows:
        torch_text = f"{theirs:11.3e}" if theirs is not None else f"{'-':>11}"
        ratio_text = f"{ratio:7.2f}" if ratio is not None else f"{'-':>7}"
        log(f"{label:<36} {name:<22} {ours:11.3e} {torch_text} {ratio_text} {note}".rstrip())
        if ratio is not None:
            worst[label] = max(worst.get(label, 0.0), ratio)
    for label, ratio in worst.items():
        target = " (target <= 1.25)" if label == "bfloat16" else " (torch in bfloat16)"
        log(f"{label}: largest lstmop/torch error ratio {ratio:.2f}{target}")
    half = [ours for label, _, ours, _, _, _ in rows if label == "float16"]
    if half:
        log(f"float16: largest lstmop error {max(half):.3e} of the scale "
            f"(target <= 8 * 2^-11 = {8 * 2.0 ** -11:.3e})")
    return rows
