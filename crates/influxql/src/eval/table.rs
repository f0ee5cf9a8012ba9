//! A series' rows in one buffer of cells. Built as one `Vec` per row, the 1,441 rows of a
//! day of one-minute windows took about a quarter of the time InfluxQL spends beyond the
//! store's read (docs/BENCHMARKS.md); pushed cell by cell into one buffer, a few
//! microseconds.

use super::zone::Zone;

/// One value of a row.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    Time(i64),
    /// A time printed in a `tz()` zone (an integer in the `epoch=` unit all the same).
    ZonedTime(i64, Zone),
    Float(f64),
    Integer(i64),
    Text(String),
    Bool(bool),
    Null,
}

/// Rows of `width` cells each, in order. Invariant: `cells.len()` is a multiple of
/// `width` (a row given with fewer cells is completed with nulls, extra cells dropped:
/// every row of a series has one cell per column, as InfluxDB's do).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Rows {
    width: usize,
    cells: Vec<Cell>,
}

impl Rows {
    /// Room for `rows` rows of `width` cells.
    pub fn with_capacity(width: usize, rows: usize) -> Self {
        Rows {
            width,
            cells: Vec::with_capacity(width.saturating_mul(rows)),
        }
    }

    /// Rows from their cells, row after row, `width` each: what a caller that makes many
    /// rows builds (a cell pushed at a time, no row in between). An incomplete last row
    /// is completed with nulls (see the invariant).
    pub fn from_cells(width: usize, mut cells: Vec<Cell>) -> Self {
        if let Some(short) = cells.len().checked_rem(width).filter(|&r| r > 0) {
            cells.resize(cells.len() + width - short, Cell::Null);
        }
        Rows { width, cells }
    }

    /// Appends one row, completed or cut to the width (see the invariant).
    pub fn push(&mut self, row: impl IntoIterator<Item = Cell>) {
        let end = self.cells.len() + self.width;
        for cell in row {
            if self.cells.len() < end {
                self.cells.push(cell);
            }
        }
        while self.cells.len() < end {
            self.cells.push(Cell::Null);
        }
    }

    pub fn len(&self) -> usize {
        self.cells.len().checked_div(self.width).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The rows in order, each a slice of `width` cells.
    pub fn iter(&self) -> std::slice::ChunksExact<'_, Cell> {
        self.cells.chunks_exact(self.width.max(1))
    }

    pub fn iter_mut(&mut self) -> std::slice::ChunksExactMut<'_, Cell> {
        self.cells.chunks_exact_mut(self.width.max(1))
    }

    /// The rows in reverse order, each row's cells as they were.
    /// The time cells (the first of each row) printed in `zone`; `None` (UTC): as they are.
    pub fn zoned(&mut self, zone: Option<Zone>) {
        let Some(zone) = zone else {
            return;
        };
        for row in self.iter_mut() {
            if let Some(Cell::Time(t)) = row.first() {
                row[0] = Cell::ZonedTime(*t, zone);
            }
        }
    }

    pub fn reverse(&mut self) {
        self.cells.reverse();
        for row in self.iter_mut() {
            row.reverse();
        }
    }

    /// Rows `offset..offset + limit` (what there is of them), the rest dropped.
    pub fn page(&mut self, offset: usize, limit: usize) {
        let start = offset.saturating_mul(self.width).min(self.cells.len());
        let end = offset
            .saturating_add(limit)
            .saturating_mul(self.width)
            .min(self.cells.len());
        self.cells.truncate(end);
        self.cells.drain(..start);
    }
}

impl<'a> IntoIterator for &'a Rows {
    type Item = &'a [Cell];
    type IntoIter = std::slice::ChunksExact<'a, Cell>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// Rows one `Vec` each, as the paths that build few rows make them: the first row's
/// length is the width.
impl FromIterator<Vec<Cell>> for Rows {
    fn from_iter<I: IntoIterator<Item = Vec<Cell>>>(rows: I) -> Self {
        let mut rows = rows.into_iter().peekable();
        let width = rows.peek().map_or(0, Vec::len);
        let mut out = Rows::with_capacity(width, rows.size_hint().0);
        for row in rows {
            out.push(row);
        }
        out
    }
}

impl From<Vec<Vec<Cell>>> for Rows {
    fn from(rows: Vec<Vec<Cell>>) -> Self {
        rows.into_iter().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(times: &[i64]) -> Rows {
        times
            .iter()
            .map(|&t| vec![Cell::Time(t), Cell::Float(t as f64 / 2.0)])
            .collect()
    }

    fn times(rows: &Rows) -> Vec<i64> {
        rows.iter()
            .map(|row| match row {
                [Cell::Time(t), Cell::Float(x)] if *x == *t as f64 / 2.0 => *t,
                other => panic!("a row apart: {other:?}"),
            })
            .collect()
    }

    #[test]
    fn rows_reverse_and_page_whole() {
        let mut r = rows(&[1, 2, 3, 4, 5]);
        assert_eq!(r.len(), 5);
        r.reverse();
        assert_eq!(times(&r), [5, 4, 3, 2, 1]);
        r.page(1, 2);
        assert_eq!(times(&r), [4, 3]);
        r.page(1, usize::MAX);
        assert_eq!(times(&r), [3]);
        r.page(5, 1);
        assert!(r.is_empty());
        let empty: Rows = Vec::<Vec<Cell>>::new().into();
        assert_eq!((empty.len(), empty.iter().count()), (0, 0));
    }

    #[test]
    fn a_row_keeps_the_width() {
        let mut r = Rows::with_capacity(2, 2);
        r.push([Cell::Time(1)]);
        r.push([Cell::Time(2), Cell::Integer(3), Cell::Integer(4)]);
        let all: Vec<&[Cell]> = r.iter().collect();
        let expected = [
            &[Cell::Time(1), Cell::Null][..],
            &[Cell::Time(2), Cell::Integer(3)][..],
        ];
        assert_eq!(all, expected);
        let cells = vec![Cell::Time(1), Cell::Null, Cell::Time(2), Cell::Integer(3)];
        assert_eq!(Rows::from_cells(2, cells), r);
        let short = Rows::from_cells(2, vec![Cell::Time(1), Cell::Null, Cell::Time(2)]);
        assert_eq!(short.iter().last(), Some(&[Cell::Time(2), Cell::Null][..]));
    }
}
