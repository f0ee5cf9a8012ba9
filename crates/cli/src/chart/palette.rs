//! Series colours: Tableau 10, ten hues that stay apart on white and for most colour-blind
//! readers. Series past the tenth reuse them in order.

use plotters::style::RGBColor;

pub const PALETTE: [RGBColor; 10] = [
    RGBColor(0x4e, 0x79, 0xa7), // blue
    RGBColor(0xf2, 0x8e, 0x2b), // orange
    RGBColor(0xe1, 0x57, 0x59), // red
    RGBColor(0x76, 0xb7, 0xb2), // teal
    RGBColor(0x59, 0xa1, 0x4f), // green
    RGBColor(0xed, 0xc9, 0x48), // yellow
    RGBColor(0xb0, 0x7a, 0xa1), // purple
    RGBColor(0xff, 0x9d, 0xa7), // pink
    RGBColor(0x9c, 0x75, 0x5f), // brown
    RGBColor(0xba, 0xb0, 0xac), // grey
];

/// The colour of series `index`.
pub fn color(index: usize) -> RGBColor {
    PALETTE[index % PALETTE.len()]
}
