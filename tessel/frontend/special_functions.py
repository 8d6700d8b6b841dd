"""Special functions torch-mlir has no lowering for, written with ops it lowers.

Each follows the algorithm eager uses (the Cephes ports in ATen/native/Math.h) or a
standard series of known accuracy, evaluated in float64 and rounded to the input's
dtype: the results agree with eager to the input dtype's precision. Loops of a fixed
trip count are unrolled; data-dependent loops are replaced by a fixed number of
masked steps that covers every input. Inputs other than float32/float16/bfloat16
(float64 would lose the extra precision, integers promote differently) keep the op.
"""

from __future__ import annotations

import math

import torch

aten = torch.ops.aten

_NARROW_FLOATS = (torch.float32, torch.float16, torch.bfloat16)

# Chebyshev coefficients of exp(-x) I0(x) on [0, 8] and exp(-x) sqrt(x) I0(x) on [8, inf).
_I0E_A = (
    -4.41534164647933937950E-18, 3.33079451882223809783E-17, -2.43127984654795469359E-16,
    1.71539128555513303061E-15, -1.16853328779934516808E-14, 7.67618549860493561688E-14,
    -4.85644678311192946090E-13, 2.95505266312963983461E-12, -1.72682629144155570723E-11,
    9.67580903537323691224E-11, -5.18979560163526290666E-10, 2.65982372468238665035E-9,
    -1.30002500998624804212E-8, 6.04699502254191894932E-8, -2.67079385394061173391E-7,
    1.11738753912010371815E-6, -4.41673835845875056359E-6, 1.64484480707288970893E-5,
    -5.75419501008210370398E-5, 1.88502885095841655729E-4, -5.76375574538582365885E-4,
    1.63947561694133579842E-3, -4.32430999505057594430E-3, 1.05464603945949983183E-2,
    -2.37374148058994688156E-2, 4.93052842396707084878E-2, -9.49010970480476444210E-2,
    1.71620901522208775349E-1, -3.04682672343198398683E-1, 6.76795274409476084995E-1)
_I0E_B = (
    -7.23318048787475395456E-18, -4.83050448594418207126E-18, 4.46562142029675999901E-17,
    3.46122286769746109310E-17, -2.82762398051658348494E-16, -3.42548561967721913462E-16,
    1.77256013305652638360E-15, 3.81168066935262242075E-15, -9.55484669882830764870E-15,
    -4.15056934728722208663E-14, 1.54008621752140982691E-14, 3.85277838274214270114E-13,
    7.18012445138366623367E-13, -1.79417853150680611778E-12, -1.32158118404477131188E-11,
    -3.14991652796324136454E-11, 1.18891471078464383424E-11, 4.94060238822496958910E-10,
    3.39623202570838634515E-9, 2.26666899049817806459E-8, 2.04891858946906374183E-7,
    2.89137052083475648297E-6, 6.88975834691682398426E-5, 3.36911647825569408990E-3,
    8.04490411014108831608E-1)
# The same for I1: exp(-x) I1(x) / x on [0, 8], exp(-x) sqrt(x) I1(x) on [8, inf).
_I1E_A = (
    2.77791411276104639959E-18, -2.11142121435816608115E-17, 1.55363195773620046921E-16,
    -1.10559694773538630805E-15, 7.60068429473540693410E-15, -5.04218550472791168711E-14,
    3.22379336594557470981E-13, -1.98397439776494371520E-12, 1.17361862988909016308E-11,
    -6.66348972350202774223E-11, 3.62559028155211703701E-10, -1.88724975172282928790E-9,
    9.38153738649577178388E-9, -4.44505912879632808065E-8, 2.00329475355213526229E-7,
    -8.56872026469545474066E-7, 3.47025130813767847674E-6, -1.32731636560394358279E-5,
    4.78156510755005422638E-5, -1.61760815825896745588E-4, 5.12285956168575772895E-4,
    -1.51357245063125314899E-3, 4.15642294431288815669E-3, -1.05640848946261981558E-2,
    2.47264490306265168283E-2, -5.29459812080949914269E-2, 1.02643658689847095384E-1,
    -1.76416518357834055153E-1, 2.52587186443633654823E-1)
_I1E_B = (
    7.51729631084210481353E-18, 4.41434832307170791151E-18, -4.65030536848935832153E-17,
    -3.20952592199342395980E-17, 2.96262899764595013876E-16, 3.30820231092092828324E-16,
    -1.88035477551078244854E-15, -3.81440307243700780478E-15, 1.04202769841288027642E-14,
    4.27244001671195135429E-14, -2.10154184277266431302E-14, -4.08355111109219731823E-13,
    -7.19855177624590851209E-13, 2.03562854414708950722E-12, 1.41258074366137813316E-11,
    3.25260358301548823856E-11, -1.89749581235054123450E-11, -5.58974346219658380687E-10,
    -3.83538038596423702205E-9, -2.63146884688951950684E-8, -2.51223623787020892529E-7,
    -3.88256480887769039346E-6, -1.10588938762623716291E-4, -9.76109749136146840777E-3,
    7.78576235018280120474E-1)


def _chbevl(x, coefficients):
    """Cephes' Clenshaw recurrence for a Chebyshev series (a fixed trip count)."""
    b0, b1, b2 = torch.full_like(x, coefficients[0]), torch.zeros_like(x), torch.zeros_like(x)
    for c in coefficients[1:]:
        b2, b1 = b1, b0
        b0 = x * b1 - b2 + c
    return 0.5 * (b0 - b2)


def _scaled_bessel(ax, small, large):
    """exp(-x)-scaled Bessel series at |x|: `small` on [0, 8], `large` (over sqrt(x)) above."""
    near = _chbevl(ax / 2.0 - 2.0, small)
    # Keep 32/x finite where the [0, 8] branch is taken (both branches are evaluated).
    far = _chbevl(32.0 / torch.clamp(ax, min=8.0) - 2.0, large) / torch.sqrt(torch.clamp(ax, min=8.0))
    return torch.where(ax <= 8.0, near, far)


def _float64_unary(compute):
    """A decomposition that evaluates `compute` in float64 and rounds to the input dtype."""
    def decomposition(x):
        if x.dtype not in _NARROW_FLOATS:
            return NotImplemented
        return compute(x.to(torch.float64)).to(x.dtype)
    decomposition.__name__ = compute.__name__
    decomposition.__doc__ = compute.__doc__
    return decomposition


@_float64_unary
def i0e(x):
    """exp(-|x|) I0(x) (Cephes i0e)."""
    return _scaled_bessel(x.abs(), _I0E_A, _I0E_B)


def _exp_as_eager(x):
    """exp(x) rounded through float32, which eager computes it in for every narrow
    dtype: where that overflows to inf, eager's I0 and I1 are inf (or NaN) too."""
    return torch.exp(x).to(torch.float32).to(torch.float64)


@_float64_unary
def i0(x):
    """I0(x), the modified Bessel function of the first kind, order 0 (Cephes i0)."""
    return _exp_as_eager(x.abs()) * _scaled_bessel(x.abs(), _I0E_A, _I0E_B)


def _i1e_of(x):
    ax = x.abs()
    near_factor = torch.where(ax <= 8.0, ax, 1.0)  # the [0, 8] series is of I1(x)/x
    return torch.sign(x) * near_factor * _scaled_bessel(ax, _I1E_A, _I1E_B)


@_float64_unary
def i1e(x):
    """exp(-|x|) I1(x) (Cephes i1e)."""
    return _i1e_of(x)


@_float64_unary
def i1(x):
    """I1(x), the modified Bessel function of the first kind, order 1 (Cephes i1)."""
    return _exp_as_eager(x.abs()) * _i1e_of(x)


# Asymptotic series of digamma in 1/x^2 (Cephes psi), highest power first.
_DIGAMMA_ASYMPTOTIC = (8.33333333333333333333E-2, -2.10927960927960927961E-2,
                       7.57575757575757575758E-3, -4.16666666666666666667E-3,
                       3.96825396825396825397E-3, -8.33333333333333333333E-3,
                       8.33333333333333333333E-2)


def _digamma_of_positive(x):
    """digamma for x > 0: the recurrence psi(x) = psi(x+1) - 1/x up to x >= 10 (ten
    masked steps reach it from any x > 0), then the asymptotic series."""
    result = torch.zeros_like(x)
    for _ in range(10):
        below = x < 10.0
        result = result - torch.where(below, 1.0 / x, 0.0)
        x = torch.where(below, x + 1.0, x)
    z = 1.0 / (x * x)
    series = torch.zeros_like(x)
    for c in _DIGAMMA_ASYMPTOTIC:
        series = series * z + c
    return result + torch.log(x) - 0.5 / x - z * series


@_float64_unary
def digamma(x):
    """digamma (Cephes psi): reflection for x < 0, poles at 0 and the negative integers."""
    negative = x < 0
    fraction = x - torch.trunc(x)  # tan(pi * fraction) is more accurate than tan(pi * x)
    reflected = _digamma_of_positive(torch.where(negative, 1.0 - x, x))
    reflected = reflected - torch.where(negative, math.pi / torch.tan(math.pi * fraction), 0.0)
    # +0 -> -inf and -0 -> +inf (C++ and SciPy); negative integers -> NaN.
    at_zero = torch.where(1.0 / x < 0, math.inf, -math.inf)
    result = torch.where(x == 0, at_zero, reflected)
    return torch.where(negative & (x == torch.trunc(x)), math.nan, result)


def polygamma(n, x):
    """polygamma of order 0 is digamma; higher orders keep the op (their Hurwitz zeta
    needs a data-dependent number of terms for negative x)."""
    if n != 0:
        return NotImplemented
    return digamma(x)


# Lanczos approximation (g = 7, 9 terms): |relative error| < 1e-15 for x >= 0.5.
_LANCZOS_G = 7.0
_LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028,
            771.32342877765313, -176.61502916214059, 12.507343278686905,
            -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7)


def _lgamma_of_large(x):
    """log|Gamma(x)| for x >= 0.5 (Lanczos, in log form so it does not overflow)."""
    shifted = x - 1.0
    series = torch.full_like(x, _LANCZOS[0])
    for k, c in enumerate(_LANCZOS[1:], start=1):
        series = series + c / (shifted + k)
    t = shifted + _LANCZOS_G + 0.5
    return 0.5 * math.log(2 * math.pi) + (shifted + 0.5) * torch.log(t) - t + torch.log(series)


@_float64_unary
def lgamma(x):
    """log|Gamma(x)|: Lanczos for x >= 0.5, the reflection formula below; +inf at the
    poles (0 and the negative integers) and at +-inf, as eager."""
    small = x < 0.5
    large = _lgamma_of_large(torch.where(small, 1.0 - x, x))
    # |sin(pi x)| from x minus its nearest integer (exact), accurate next to the poles.
    sine = torch.sin(math.pi * (x - torch.round(x))).abs()
    reflected = math.log(math.pi) - torch.log(sine) - large
    result = torch.where(small, reflected, large)
    pole = (x <= 0) & (x == torch.floor(x))
    return torch.where(pole | torch.isinf(x), math.inf, result)


# Maclaurin coefficients of erf(x) * sqrt(pi) / (2x) in x^2: (-1)^n / (n! (2n + 1)).
# 40 terms reach float64 precision for |x| < 2.
_ERF_SERIES = tuple((-1) ** n / (math.factorial(n) * (2 * n + 1)) for n in range(40))


def _erf_of_small(x):
    """erf for |x| < 2 from its Maclaurin series (the CPU pipeline has no float64 erf)."""
    square = x * x
    series = torch.zeros_like(x)
    for c in reversed(_ERF_SERIES):
        series = series * square + c
    return (2.0 / math.sqrt(math.pi)) * x * series


def _erfc_parts(x):
    """(erfc(|x|), erfcx(|x|)) for the magnitude of x, to about 1e-13 relative:
    1 - erf below 2, else Laplace's continued fraction (60 terms, evaluated backward),
    which gives erfcx without forming exp(x^2)."""
    ax = x.abs()
    fraction = ax
    for n in range(60, 0, -1):
        fraction = ax + (n / 2) / fraction
    scaled_tail = 1.0 / (math.sqrt(math.pi) * fraction)
    small = ax < 2.0
    near = 1.0 - _erf_of_small(torch.where(small, ax, 0.0))
    erfc_abs = torch.where(small, near, torch.exp(-ax * ax) * scaled_tail)
    erfcx_abs = torch.where(small, torch.exp(ax * ax) * near, scaled_tail)
    return erfc_abs, erfcx_abs


@_float64_unary
def erfc(x):
    """1 - erf(x) without the cancellation: erfc(-x) = 2 - erfc(x)."""
    erfc_abs, _ = _erfc_parts(x)
    return torch.where(x < 0, 2.0 - erfc_abs, erfc_abs)


@_float64_unary
def erfcx(x):
    """exp(x^2) erfc(x); for x < 0, 2 exp(x^2) - erfcx(-x) (inf where exp overflows)."""
    _, erfcx_abs = _erfc_parts(x)
    return torch.where(x < 0, 2.0 * torch.exp(x * x) - erfcx_abs, erfcx_abs)


def special_decompositions() -> dict:
    """op overload -> decomposition, for the table aot_autograd applies."""
    return {
        aten.i0.default: i0,
        aten.special_i0e.default: i0e,
        aten.special_i1.default: i1,
        aten.special_i1e.default: i1e,
        aten.special_modified_bessel_i0.default: i0,
        aten.special_modified_bessel_i1.default: i1,
        aten.digamma.default: digamma,
        aten.polygamma.default: polygamma,
        aten.lgamma.default: lgamma,
        aten.erfc.default: erfc,
        aten.special_erfcx.default: erfcx,
    }
