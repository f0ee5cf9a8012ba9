//! The legend under the plot: a colour swatch and a name per series, in columns of equal
//! width; past the rows it may take, one "… and N more" entry stands for the rest.

use super::palette;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::TextStyle;

/// Pixels: the swatch's length, the space after it, between entries and around the legend.
const SWATCH: u32 = 24;
const SWATCH_GAP: u32 = 6;
const ENTRY_GAP: u32 = 18;
const PADDING: u32 = 10;
pub const ROW_HEIGHT: u32 = 20;

/// Where the entries go: `shown` entries in `columns` columns of `column_width` pixels,
/// row by row; `hidden` entries are summed up in one more.
#[derive(Debug, PartialEq, Eq)]
pub struct Layout {
    pub columns: usize,
    pub column_width: u32,
    pub shown: usize,
    pub hidden: usize,
}

impl Layout {
    /// Entries for labels `label_widths` (pixels) in `width` pixels and at most `max_rows`
    /// rows (at least one).
    pub fn new(label_widths: &[u32], width: u32, max_rows: usize) -> Self {
        let room = width.saturating_sub(2 * PADDING).max(1);
        let widest = label_widths.iter().copied().max().unwrap_or(0);
        let column_width = (SWATCH + SWATCH_GAP + widest + ENTRY_GAP).min(room);
        let columns = ((room / column_width) as usize).max(1);
        let slots = columns * max_rows.max(1);
        let (shown, hidden) = match label_widths.len() {
            n if n <= slots => (n, 0),
            // The last slot says how many did not fit.
            n => (slots - 1, n - (slots - 1)),
        };
        Self {
            columns,
            column_width,
            shown,
            hidden,
        }
    }

    pub fn rows(&self) -> usize {
        (self.shown + usize::from(self.hidden > 0)).div_ceil(self.columns)
    }

    /// The legend's height in pixels, padding included.
    pub fn height(&self) -> u32 {
        self.rows() as u32 * ROW_HEIGHT + 2 * PADDING
    }

    /// The room a label has in a column, in pixels.
    pub fn label_room(&self) -> u32 {
        self.column_width
            .saturating_sub(SWATCH + SWATCH_GAP + ENTRY_GAP / 2)
    }

    /// The top-left corner of entry `index`, relative to the legend's area.
    fn origin(&self, index: usize) -> (i32, i32) {
        let (row, column) = (index / self.columns, index % self.columns);
        (
            (PADDING + column as u32 * self.column_width) as i32,
            (PADDING + row as u32 * ROW_HEIGHT) as i32,
        )
    }
}

/// Draws the entries of `labels` (already cut to `layout.label_room()`), series `i` in
/// palette colour `i`.
pub fn draw<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    layout: &Layout,
    labels: &[String],
    style: &TextStyle,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    for (i, label) in labels.iter().take(layout.shown).enumerate() {
        let (x, y) = layout.origin(i);
        let middle = y + ROW_HEIGHT as i32 / 2;
        area.draw(&PathElement::new(
            [(x, middle), (x + SWATCH as i32, middle)],
            palette::color(i).stroke_width(3),
        ))?;
        let text_x = x + (SWATCH + SWATCH_GAP) as i32;
        area.draw(&Text::new(
            label.as_str(),
            (text_x, middle - 7),
            style.clone(),
        ))?;
    }
    if layout.hidden > 0 {
        let (x, y) = layout.origin(layout.shown);
        let text = format!("… and {} more series", layout.hidden);
        area.draw(&Text::new(
            text,
            (x, y + ROW_HEIGHT as i32 / 2 - 7),
            style.clone(),
        ))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_share_rows_in_columns_of_the_widest() {
        let layout = Layout::new(&[50, 80, 60], 1000, 3);
        assert_eq!(
            layout,
            Layout {
                columns: 7,
                column_width: 24 + 6 + 80 + 18,
                shown: 3,
                hidden: 0
            }
        );
        assert_eq!(layout.rows(), 1);
        assert_eq!(layout.height(), 20 + 20);
    }

    #[test]
    fn past_the_rows_the_rest_is_summed_up() {
        let layout = Layout::new(&[100; 30], 400, 2);
        // 380 px of room, 148 px per column: 2 columns, 4 slots, the last says "… 27 more".
        assert_eq!((layout.columns, layout.shown, layout.hidden), (2, 3, 27));
        assert_eq!(layout.rows(), 2);
    }

    #[test]
    fn a_label_wider_than_the_legend_gets_one_column() {
        let layout = Layout::new(&[5000], 400, 2);
        assert_eq!((layout.columns, layout.column_width), (1, 380));
        assert!(layout.label_room() < 380);
    }
}
