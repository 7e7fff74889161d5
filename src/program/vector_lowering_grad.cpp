// Elementwise ops that take more than one instruction: div, neg, abs, sqrt, scale, dropout
// and the activation gradients. docs/vpu.md tabulates them.
#include "vector_lower_ctx.h"

namespace tpusim {

namespace {

// Random bits from a counter-based hash on the VALU (iota + key, then two xorshift rounds of
// shift and xor), compared with the keep threshold; kept values scaled. dropout_grad
// regenerates the same mask from the seed and applies it to dy. With a saved mask (TF's
// dropout: x * scale * cast(keep_mask), whose gradient reads the cast mask), dropout also
// writes the mask as 1 or 0 in its dtype, and dropout_grad reads it: dy * mask * scale.
void dropout(Ctx& c, bool save_mask) {
    VVal iota = c.b.konst(), key = c.b.konst(), thresh = c.b.konst(), scale = c.b.konst(),
         zero = c.b.konst(), one = c.b.konst();
    lower_elementwise(c, 1, save_mask ? 2 : 1, [=](Ctx& x, Args a) {
        VVal r = x.b.op(VOp::Add, iota, key);
        for (int i = 0; i < 2; ++i) r = x.b.op(VOp::Logic, r, x.b.op(VOp::Logic, r));
        VVal keep = x.b.op(VOp::Cmp, r, thresh);
        Args out{x.b.op(VOp::Select, keep, x.b.op(VOp::Mul, a[0], scale), zero)};
        if (save_mask) out.push_back(x.b.op(VOp::Select, keep, one, zero));
        return out;
    });
}

// d/dx of x (0.5 + 0.5 tanh(u)), u = x (c0 + c1 x^2) (the tanh-approximated GELU of gelu):
// 0.5 (1 + t) + 0.5 x (1 - t^2) (c0 + 3 c1 x^2), t = tanh(u); times dy.
VVal gelu_grad(Ctx& c, VVal dy, VVal x, VVal c0, VVal c1, VVal c3, VVal half, VVal one) {
    VVal x2 = c.b.op(VOp::Mul, x, x);
    VVal u = c.b.op(VOp::Mul, x, c.fma(x2, c1, c0));
    VVal t = c.b.op(VOp::Tanh, u);
    VVal a = c.fma(t, half, half);
    VVal sech2 = c.b.op(VOp::Sub, one, c.b.op(VOp::Mul, t, t));
    VVal du = c.fma(x2, c3, c0);
    VVal q = c.b.op(VOp::Mul, c.b.op(VOp::Mul, x, sech2), du);
    return c.b.op(VOp::Mul, dy, c.fma(q, half, a));
}

void unary(Ctx& c, const std::function<VVal(Ctx&, VVal)>& f) {
    lower_elementwise(c, 1, 1, [&](Ctx& x, Args a) { return Args{f(x, a[0])}; });
}

void binary(Ctx& c, const std::function<VVal(Ctx&, VVal, VVal)>& f) {
    lower_elementwise(c, 2, 1, [&](Ctx& x, Args a) { return Args{f(x, a[0], a[1])}; });
}

}  // namespace

void lower_div(Ctx& c) {
    // The EUP reciprocal is an approximation; f32 division refines it with one
    // Newton-Raphson step, r' = r (2 - b r), before the multiply (XLA's expansion).
    VVal two = c.b.konst();
    binary(c, [=](Ctx& x, VVal a, VVal b) {
        VVal r = x.b.op(VOp::Recip, b);
        VVal e = x.b.op(VOp::Sub, two, x.b.op(VOp::Mul, b, r));
        return x.b.op(VOp::Mul, a, x.b.op(VOp::Mul, r, e));
    });
}

void lower_sign_bit(Ctx& c) {
    // Sign-bit arithmetic on the 32-bit pattern: xor (neg) or and-not (abs) with a mask.
    VVal sign = c.b.konst();
    unary(c, [=](Ctx& x, VVal a) { return x.b.op(VOp::Logic, a, sign); });
}

void lower_scale(Ctx& c) {
    VVal s = c.b.konst();
    unary(c, [=](Ctx& x, VVal a) { return x.b.op(VOp::Mul, a, s); });
}

void lower_sqrt(Ctx& c) {
    // sqrt(x) = x rsqrt(x) on the EUP's rsqrt, with x == 0 selected to 0 (0 * inf is NaN).
    VVal zero = c.b.konst();
    unary(c, [=](Ctx& x, VVal a) {
        VVal s = x.b.op(VOp::Mul, a, x.b.op(VOp::Rsqrt, a));
        return x.b.op(VOp::Select, x.b.op(VOp::Cmp, a, zero), zero, s);
    });
}

void lower_relu_grad(Ctx& c) {  // dy where x > 0
    VVal zero = c.b.konst();
    binary(c, [=](Ctx& x, VVal dy, VVal v) {
        return x.b.op(VOp::Select, x.b.op(VOp::Cmp, v, zero), dy, zero);
    });
}

void lower_gelu_grad(Ctx& c) {
    VVal c0 = c.b.konst(), c1 = c.b.konst(), c3 = c.b.konst(), half = c.b.konst(),
         one = c.b.konst();
    binary(c, [=](Ctx& x, VVal dy, VVal v) { return gelu_grad(x, dy, v, c0, c1, c3, half, one); });
}

void lower_tanh_grad(Ctx& c) {  // dy (1 - y^2), y the forward output
    VVal one = c.b.konst();
    binary(c, [=](Ctx& x, VVal dy, VVal y) {
        return x.b.op(VOp::Mul, dy, x.b.op(VOp::Sub, one, x.b.op(VOp::Mul, y, y)));
    });
}

void lower_sigmoid_grad(Ctx& c) {  // dy y (1 - y), y the forward output
    VVal one = c.b.konst();
    binary(c, [=](Ctx& x, VVal dy, VVal y) {
        return x.b.op(VOp::Mul, dy, x.b.op(VOp::Mul, y, x.b.op(VOp::Sub, one, y)));
    });
}

void lower_dropout(Ctx& c) { dropout(c, c.saved_mask); }

void lower_dropout_grad(Ctx& c) {
    if (!c.saved_mask) {
        dropout(c, false);  // the mask regenerated from the seed, applied to dy
        return;
    }
    VVal scale = c.b.konst();
    binary(c, [=](Ctx& x, VVal dy, VVal mask) {
        return x.b.op(VOp::Mul, x.b.op(VOp::Mul, dy, mask), scale);
    });
}

}  // namespace tpusim
