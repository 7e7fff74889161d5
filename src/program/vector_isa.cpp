#include "tpusim/program/vector_isa.h"

namespace tpusim {

const char* vop_name(VOp op) {
    switch (op) {
        case VOp::Add:
            return "add";
        case VOp::Sub:
            return "sub";
        case VOp::Logic:
            return "logic";
        case VOp::Mul:
            return "mul";
        case VOp::Fma:
            return "fma";
        case VOp::Max:
            return "max";
        case VOp::Min:
            return "min";
        case VOp::Cmp:
            return "cmp";
        case VOp::Select:
            return "select";
        case VOp::Splat:
            return "splat";
        case VOp::Exp:
            return "exp";
        case VOp::Log:
            return "log";
        case VOp::Rsqrt:
            return "rsqrt";
        case VOp::Recip:
            return "reciprocal";
        case VOp::Tanh:
            return "tanh";
        case VOp::Cvt:
            return "cvt";
        case VOp::Load:
            return "vld";
        case VOp::Store:
            return "vst";
        case VOp::Reduce:
            return "xlu_reduce";
        case VOp::Broadcast:
            return "xlu_broadcast";
        case VOp::Transpose:
            return "xlu_transpose";
    }
    return "?";
}

VUnit vop_unit(VOp op) {
    switch (op) {
        case VOp::Load:
            return VUnit::Vld;
        case VOp::Store:
            return VUnit::Vst;
        case VOp::Reduce:
        case VOp::Broadcast:
        case VOp::Transpose:
            return VUnit::Xlu;
        case VOp::Exp:
        case VOp::Log:
        case VOp::Rsqrt:
        case VOp::Recip:
        case VOp::Tanh:
            return VUnit::Eup;
        default:
            return VUnit::Valu;
    }
}

const char* vunit_name(VUnit u) {
    switch (u) {
        case VUnit::Valu:
            return "valu";
        case VUnit::Vld:
            return "vld";
        case VUnit::Vst:
            return "vst";
        case VUnit::Xlu:
            return "xlu";
        case VUnit::Eup:
            return "eup";
    }
    return "?";
}

}  // namespace tpusim
