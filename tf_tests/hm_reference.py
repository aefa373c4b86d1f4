"""Independent NumPy references of the HM-LSTM and HMRNN, for the tests.

Written from the papers, not from the library: the discrete modes follow
the case form of Chung et al. Eq. (2)-(3) and Kadar et al. Eq. (9) one
sample at a time; the soft mode follows the masked form of DESIGN.md.
"""

import numpy as np

FLUSH, UPDATE, COPY = "flush", "update", "copy"


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def hard_sigmoid(x, slope):
    return np.clip((slope * x + 1.0) / 2.0, 0.0, 1.0)


def surrogate(x, slope, kind="hard_sigmoid"):
    """The function whose derivative a straight-through estimator uses:
    the hard sigmoid (Chung et al.) or the logistic `sigmoid(slope * x)`
    (`boundary_gradient="sigmoid"`)."""
    return sigmoid(slope * x) if kind == "sigmoid" else hard_sigmoid(x, slope)


def layer_norm(x, gain, beta, eps=1e-5):
    mean = x.mean(-1, keepdims=True)
    var = x.var(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gain + beta


def cell_weights(cell):
    """The cell's weights as a dict name -> float64 array."""
    return {w.name: np.asarray(w.numpy(), np.float64) for w in cell.weights}


def operation(z_prev, z_below):
    if z_prev == 1.0:
        return FLUSH
    if z_below == 1.0:
        return UPDATE
    return COPY


def _preactivations(w, n, below, z_below, h_prev, above, z_prev, ln, has_td):
    bu = below @ w[f"kernel_{n}"]
    rec = h_prev @ w[f"recurrent_kernel_{n}"]
    td = above @ w[f"top_down_kernel_{n}"] if has_td else None
    if ln:
        bu = layer_norm(bu, w[f"norm_bottom_up_{n}_gain"], w[f"norm_bottom_up_{n}_beta"])
        rec = layer_norm(rec, w[f"norm_recurrent_{n}_gain"], w[f"norm_recurrent_{n}_beta"])
        if has_td:
            td = layer_norm(td, w[f"norm_top_down_{n}_gain"], w[f"norm_top_down_{n}_beta"])
    return bu, rec, td


def detector_preactivation(w, n, column, hidden, boundary_input):
    """The pre-activation of `z^n`: the products' boundary `column` (Chung
    et al. Eq. 5-7), or with `boundary_input="updated"` the layer's new
    state `hidden` through its `detector_kernel_n` and `detector_bias_n`."""
    if boundary_input == "updated":
        return hidden @ w[f"detector_kernel_{n}"][:, 0] + w[f"detector_bias_{n}"][0]
    return column


def hmlstm(
    x,
    w,
    units,
    mode="step",
    slope=1.0,
    layer_norm_on=True,
    top_down=True,
    copy_last=False,
    boundaries=None,
    z_offsets=None,
    gradient="hard_sigmoid",
    boundary_input="previous",
    nested=False,
):
    """Runs the HM-LSTM over `x` (batch, time, features).

    `boundaries` (batch, time, L-1), when given, replaces the detector's
    decisions (used for the "sample" mode); `z_tilde` is returned so that
    the sampling probabilities can be checked.

    `z_offsets` (batch, time, L-1), soft mode only, gives z = z~ + offset.
    With offset = z - z~ of a discrete run at weights w0, the forward at w0
    is that run's and its derivative is the straight-through gradient
    (dz/dz~ = 1): finite differences of it check the step/sample modes.
    With `gradient="sigmoid"` z~ is `sigmoid(slope * x)` (`surrogate`), the
    surrogate of that estimator: the step decisions (z~ > 0.5, i.e. x > 0)
    are the same, the soft form with offsets has its derivative.
    `boundary_input="updated"`: each detector reads its layer's new `h`
    (`detector_preactivation`), and the products have no boundary column.
    `nested`: `z^l_t` is the detector's decision times `z^{l-1}_t` (after
    any `boundaries` or `z_offsets`), for `l > 1`.

    Returns dict: outputs (B, T, sum+L-1), h (list of final h), c (list),
    z (final), z_tilde (B, T, L-1), z_own (B, T, L-1): each detector's
    decision before nesting, ops (B, T, L) operation names.
    """
    B, T, _ = x.shape
    L = len(units)
    h = [np.zeros((B, u)) for u in units]
    c = [np.zeros((B, u)) for u in units]
    z_prev = np.zeros((B, L - 1))
    outputs, z_tildes, z_owns, ops_all = [], [], [], []
    for t in range(T):
        below, z_below = x[:, t], np.ones(B)
        new_h, new_c, new_z, z_tilde_t, ops_t = [], [], np.zeros((B, L - 1)), np.zeros((B, L - 1)), []
        z_own_t = np.zeros((B, L - 1))
        for l in range(L):
            n, u, top = l + 1, units[l], l == L - 1
            has_td = top_down and not top
            bu, rec, td = _preactivations(w, n, below, z_below, h[l], h[l + 1] if has_td else None, None, layer_norm_on, has_td)
            hl, cl, ops_l = np.zeros((B, u)), np.zeros((B, u)), []
            for b in range(B):
                zp = 0.0 if top else z_prev[b, l]
                s = z_below[b] * bu[b] + rec[b] + w[f"bias_{n}"]
                if has_td:
                    s = s + zp * td[b]
                f, i, o = sigmoid(s[:u]), sigmoid(s[u:2 * u]), sigmoid(s[2 * u:3 * u])
                g = np.tanh(s[3 * u:4 * u])
                if mode == "soft":  # Kadar Eq. (12) with c_m, u_m masks
                    copy = (1 - zp) * (1 - z_below[b])
                    update = (1 - zp) * z_below[b]
                    cl[b] = copy * c[l][b] + (1 - copy) * i * g + update * f * c[l][b]
                    op = None
                else:
                    op = operation(zp, z_below[b])
                    if op == FLUSH:  # Chung Eq. (2)
                        cl[b] = i * g
                    elif op == UPDATE:
                        cl[b] = f * c[l][b] + i * g
                    else:
                        cl[b] = c[l][b]
                c_out = cl[b]
                if layer_norm_on:
                    c_out = layer_norm(cl[b], w[f"norm_cell_{n}_gain"], w[f"norm_cell_{n}_beta"])
                h_new = o * np.tanh(c_out)
                if mode == "soft":
                    hl[b] = h_new if (top and copy_last) else copy * h[l][b] + (1 - copy) * h_new
                elif op == COPY and not (top and copy_last):  # Chung Eq. (3)
                    hl[b] = h[l][b]
                else:
                    hl[b] = h_new
                ops_l.append(op)
                if not top:
                    pre = detector_preactivation(w, n, s[4 * u:], hl[b], boundary_input)
                    zt = surrogate(np.squeeze(pre), slope, gradient)
                    z_tilde_t[b, l] = zt
                    if boundaries is not None:
                        new_z[b, l] = boundaries[b, t, l]
                    elif mode == "soft":
                        new_z[b, l] = zt if z_offsets is None else zt + z_offsets[b, t, l]
                    else:
                        new_z[b, l] = 1.0 if zt > 0.5 else 0.0  # Chung Eq. (9)
                    z_own_t[b, l] = new_z[b, l]
                    if nested and l > 0:
                        new_z[b, l] *= z_below[b]
            ops_t.append(ops_l)
            new_h.append(hl)
            new_c.append(cl)
            below = hl
            if not top:
                z_below = new_z[:, l]
        h, c, z_prev = new_h, new_c, new_z
        outputs.append(np.concatenate(h + [z_prev], axis=-1))
        z_tildes.append(z_tilde_t)
        z_owns.append(z_own_t)
        ops_all.append(np.array(ops_t, dtype=object).T)  # (B, L)
    return {
        "outputs": np.stack(outputs, 1),
        "h": h,
        "c": c,
        "z": z_prev,
        "z_tilde": np.stack(z_tildes, 1),
        "z_own": np.stack(z_owns, 1),
        "ops": np.stack(ops_all, 1),
    }


def hmrnn(x, w, units, mode="step", slope=1.0, layer_norm_on=True, top_down=True, boundaries=None,
          z_offsets=None, gradient="hard_sigmoid", boundary_input="previous", nested=False):
    """Runs the HMRNN (Kadar et al. Eq. 9) over `x`; see `hmlstm`."""
    B, T, _ = x.shape
    L = len(units)
    h = [np.zeros((B, u)) for u in units]
    z_prev = np.zeros((B, L - 1))
    outputs, z_tildes, z_owns, ops_all = [], [], [], []
    for t in range(T):
        below, z_below = x[:, t], np.ones(B)
        new_h, new_z, z_tilde_t, ops_t = [], np.zeros((B, L - 1)), np.zeros((B, L - 1)), []
        z_own_t = np.zeros((B, L - 1))
        for l in range(L):
            n, u, top = l + 1, units[l], l == L - 1
            has_td = top_down and not top
            bu, rec, td = _preactivations(w, n, below, None, h[l], h[l + 1] if has_td else None, None, layer_norm_on, has_td)
            hl, ops_l = np.zeros((B, u)), []
            for b in range(B):
                zp = 0.0 if top else z_prev[b, l]
                if mode == "soft":
                    copy = (1 - zp) * (1 - z_below[b])
                    upd = z_below[b] if top else (1 - zp) * z_below[b]
                    s = bu[b] + w[f"bias_{n}"] + (rec[b] if top else upd * rec[b])
                    if has_td:
                        s = s + (1 - upd) * td[b]
                    hl[b] = copy * h[l][b] + (1 - copy) * np.tanh(s[:u])
                    op = None
                else:
                    op = operation(zp, z_below[b])
                    # Kadar Eq. (9); for the detector, Eq. (15) mixes with
                    # u_m, so a COPY step reads the FLUSH pre-activation.
                    if op in (FLUSH, COPY) and not top:
                        s = bu[b] + w[f"bias_{n}"] + (td[b] if has_td else 0.0)
                    else:
                        s = bu[b] + rec[b] + w[f"bias_{n}"]
                    hl[b] = h[l][b] if op == COPY else np.tanh(s[:u])
                ops_l.append(op)
                if not top:
                    pre = detector_preactivation(w, n, s[u:], hl[b], boundary_input)
                    zt = surrogate(np.squeeze(pre), slope, gradient)
                    z_tilde_t[b, l] = zt
                    if boundaries is not None:
                        new_z[b, l] = boundaries[b, t, l]
                    elif mode == "soft":
                        new_z[b, l] = zt if z_offsets is None else zt + z_offsets[b, t, l]
                    else:
                        new_z[b, l] = 1.0 if zt > 0.5 else 0.0
                    z_own_t[b, l] = new_z[b, l]
                    if nested and l > 0:
                        new_z[b, l] *= z_below[b]
            ops_t.append(ops_l)
            new_h.append(hl)
            below = hl
            if not top:
                z_below = new_z[:, l]
        h, z_prev = new_h, new_z
        outputs.append(np.concatenate(h + [z_prev], axis=-1))
        z_tildes.append(z_tilde_t)
        z_owns.append(z_own_t)
        ops_all.append(np.array(ops_t, dtype=object).T)
    return {
        "outputs": np.stack(outputs, 1),
        "h": h,
        "z": z_prev,
        "z_tilde": np.stack(z_tildes, 1),
        "z_own": np.stack(z_owns, 1),
        "ops": np.stack(ops_all, 1),
    }
