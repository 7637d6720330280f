//! Constants of the `f64` functions: parts of pi/2, ln 2 and their kin, Taylor coefficients,
//! the table of `atan(j/16)` and the bits of 2/pi, as the bits of doubles (each rounded to
//! nearest from a 2000-bit value; generated once with mpmath, checked by the model tests).

/// pi/2 rounded to a double (the first part of pi/2 = PIO2_1 + PIO2_2 + PIO2_3).
pub(crate) const PIO2_1: u64 = 0x3FF921FB54442D18;

/// pi/2 - PIO2_1, rounded.
pub(crate) const PIO2_2: u64 = 0x3C91A62633145C07;

/// pi/2 - PIO2_1 - PIO2_2, rounded.
pub(crate) const PIO2_3: u64 = 0xB91F1976B7ED8FBC;

/// 2/pi, rounded.
pub(crate) const TWO_OVER_PI: u64 = 0x3FE45F306DC9C883;

/// pi, rounded.
pub(crate) const PI_HI: u64 = 0x400921FB54442D18;

/// pi - PI_HI, rounded.
pub(crate) const PI_LO: u64 = 0x3CA1A62633145C07;

/// ln 2 rounded (ln 2 = LN2_1 + LN2_2 + LN2_3).
pub(crate) const LN2_1: u64 = 0x3FE62E42FEFA39EF;

/// ln 2 - LN2_1, rounded.
pub(crate) const LN2_2: u64 = 0x3C7ABC9E3B39803F;

/// ln 2 - LN2_1 - LN2_2, rounded.
pub(crate) const LN2_3: u64 = 0x3907B57A079A1934;

/// 1 / ln 2 (log2 e), rounded.
pub(crate) const INV_LN2: u64 = 0x3FF71547652B82FE;

/// log2 e - INV_LN2, rounded.
pub(crate) const LOG2E_LO: u64 = 0x3C7777D0FFDA0D24;

/// sqrt(1/2), rounded.
pub(crate) const SQRT_HALF: u64 = 0x3FE6A09E667F3BCD;

/// 1/n! for n = 2..=14: e^r = 1 + r + r^2 (1/2! + r/3! + ...).
pub(crate) const EXP_TAYLOR: [u64; 13] = [
    0x3FE0000000000000,
    0x3FC5555555555555,
    0x3FA5555555555555,
    0x3F81111111111111,
    0x3F56C16C16C16C17,
    0x3F2A01A01A01A01A,
    0x3EFA01A01A01A01A,
    0x3EC71DE3A556C734,
    0x3E927E4FB7789F5C,
    0x3E5AE64567F544E4,
    0x3E21EED8EFF8D898,
    0x3DE6124613A86D09,
    0x3DA93974A8C07C9D,
];

/// (-1)^n/(2n+1)! for n = 1..=9: sin r = r + r^3 (-1/3! + r^2/5! - ...).
pub(crate) const SIN_TAYLOR: [u64; 9] = [
    0xBFC5555555555555,
    0x3F81111111111111,
    0xBF2A01A01A01A01A,
    0x3EC71DE3A556C734,
    0xBE5AE64567F544E4,
    0x3DE6124613A86D09,
    0xBD6AE7F3E733B81F,
    0x3CE952C77030AD4A,
    0xBC62F49B46814157,
];

/// (-1)^n/(2n)! for n = 2..=9: cos r = 1 - r^2/2 + r^4 (1/4! - r^2/6! + ...).
pub(crate) const COS_TAYLOR: [u64; 8] = [
    0x3FA5555555555555,
    0xBF56C16C16C16C17,
    0x3EFA01A01A01A01A,
    0xBE927E4FB7789F5C,
    0x3E21EED8EFF8D898,
    0xBDA93974A8C07C9D,
    0x3D2AE7F3E733B81F,
    0xBCA6827863B97D97,
];

/// 1/(2n+1)! for n = 1..=10: sinh a = a + a^3 (1/3! + a^2/5! + ...).
pub(crate) const SINH_TAYLOR: [u64; 10] = [
    0x3FC5555555555555,
    0x3F81111111111111,
    0x3F2A01A01A01A01A,
    0x3EC71DE3A556C734,
    0x3E5AE64567F544E4,
    0x3DE6124613A86D09,
    0x3D6AE7F3E733B81F,
    0x3CE952C77030AD4A,
    0x3C62F49B46814157,
    0x3BD71B8EF6DCF572,
];

/// 2/(2n+1) for n = 1..=11: 2 atanh(s) = 2s + s (2s^2/3 + 2s^4/5 + ...).
pub(crate) const LOG_SERIES: [u64; 11] = [
    0x3FE5555555555555,
    0x3FD999999999999A,
    0x3FD2492492492492,
    0x3FCC71C71C71C71C,
    0x3FC745D1745D1746,
    0x3FC3B13B13B13B14,
    0x3FC1111111111111,
    0x3FBE1E1E1E1E1E1E,
    0x3FBAF286BCA1AF28,
    0x3FB8618618618618,
    0x3FB642C8590B2164,
];

/// (-1)^n/(2n+1) for n = 1..=6: atan u = u + u^3 (-1/3 + u^2/5 - ...).
pub(crate) const ATAN_SERIES: [u64; 6] = [
    0xBFD5555555555555,
    0x3FC999999999999A,
    0xBFC2492492492492,
    0x3FBC71C71C71C71C,
    0xBFB745D1745D1746,
    0x3FB3B13B13B13B14,
];

/// atan(j/16) rounded, j = 0..=16.
pub(crate) const ATAN_HI: [u64; 17] = [
    0x0000000000000000,
    0x3FAFF55BB72CFDEA,
    0x3FBFD5BA9AAC2F6E,
    0x3FC7B97B4BCE5B02,
    0x3FCF5B75F92C80DD,
    0x3FD362773707EBCC,
    0x3FD6F61941E4DEF1,
    0x3FDA64EEC3CC23FD,
    0x3FDDAC670561BB4F,
    0x3FE0657E94DB30D0,
    0x3FE1E00BABDEFEB4,
    0x3FE345F01CCE37BB,
    0x3FE4978FA3269EE1,
    0x3FE5D58987169B18,
    0x3FE700A7C5784634,
    0x3FE819D0B7158A4D,
    0x3FE921FB54442D18,
];

/// atan(j/16) - ATAN_HI[j], rounded.
pub(crate) const ATAN_LO: [u64; 17] = [
    0x0000000000000000,
    0xBC3C934D86D23F1D,
    0xBC4CD37686760C17,
    0x3C5347B0B4F881CA,
    0x3C68AB6E3CF7AFBD,
    0xBC6963A544B672D8,
    0xBC7C63AAE6F6E918,
    0xBC724DEC1B50B7FF,
    0x3C7A2B7F222F65E2,
    0xBC7D5B495F6349E6,
    0xBC5928DF287A668F,
    0x3C81021137C71102,
    0x3C72419A87F2A458,
    0x3C60028E4BC5E7CA,
    0xBC78C34D25AADEF6,
    0xBC7BF76229D3B917,
    0x3C81A62633145C07,
];

/// One zero word, then the bits of 2/pi after the binary point, 64 per word (1216 bits).
pub(crate) const TWO_OVER_PI_BITS: [u64; 20] = [
    0x0000000000000000,
    0xA2F9836E4E441529,
    0xFC2757D1F534DDC0,
    0xDB6295993C439041,
    0xFE5163ABDEBBC561,
    0xB7246E3A424DD2E0,
    0x06492EEA09D1921C,
    0xFE1DEB1CB129A73E,
    0xE88235F52EBB4484,
    0xE99C7026B45F7E41,
    0x3991D639835339F4,
    0x9C845F8BBDF9283B,
    0x1FF897FFDE05980F,
    0xEF2F118B5A0A6D1F,
    0x6D367ECF27CB09B7,
    0x4F463F669E5FEA2D,
    0x7527BAC7EBE5F17B,
    0x3D0739F78A5292EA,
    0x6BFB5FB11F8D5D08,
    0x56033046FC7B6BAB,
];
