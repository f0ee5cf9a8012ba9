//! Text on PNG charts, laid out with ab_glyph directly.
//!
//! plotters 0.3.7 draws each glyph of a text at its pen position without the glyph's own
//! left edge (`px_bounds().min.x`) and truncates every position to a whole pixel, so the
//! gaps between letters come out uneven ("Ti me", "22:1 3"). [`GlyphText`] wraps a bitmap
//! backend and draws and measures text itself: each glyph placed at its exact (sub-pixel)
//! pen position, rasterised with its coverage as alpha. Everything else goes to the
//! wrapped backend unchanged. The SVG backend needs none of this: it writes `<text>`.

use ab_glyph::{point, Font, FontRef, ScaleFont};
use plotters::backend::DrawingBackend;
use plotters::style::text_anchor::{HPos, VPos};
use plotters_backend::{
    BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingErrorKind,
};

/// `inner` with text drawn in `font`, whatever family a style names (charts use one).
pub struct GlyphText<B> {
    inner: B,
    font: FontRef<'static>,
}

impl<B> GlyphText<B> {
    pub fn new(inner: B, font: FontRef<'static>) -> Self {
        Self { inner, font }
    }
}

/// A text's pen positions at `size` px: each glyph with its x offset from the text's
/// start, and the text's width and height (ascent to descent).
struct Layout {
    glyphs: Vec<(ab_glyph::GlyphId, f32)>,
    width: f32,
    ascent: f32,
    height: f32,
}

fn layout(font: &FontRef<'static>, size: f32, text: &str) -> Layout {
    let scaled = font.as_scaled(size);
    let mut caret = 0.0_f32;
    let mut previous = None;
    let mut glyphs = Vec::with_capacity(text.len());
    for c in text.chars() {
        let id = scaled.glyph_id(c);
        if let Some(previous) = previous {
            caret += scaled.kern(previous, id);
        }
        glyphs.push((id, caret));
        caret += scaled.h_advance(id);
        previous = Some(id);
    }
    Layout {
        glyphs,
        width: caret,
        ascent: scaled.ascent(),
        height: scaled.ascent() - scaled.descent(),
    }
}

impl<B: DrawingBackend> DrawingBackend for GlyphText<B> {
    type ErrorType = B::ErrorType;

    fn get_size(&self) -> (u32, u32) {
        self.inner.get_size()
    }

    fn ensure_prepared(&mut self) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.ensure_prepared()
    }

    fn present(&mut self) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.present()
    }

    fn draw_pixel(
        &mut self,
        point: BackendCoord,
        color: BackendColor,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_pixel(point, color)
    }

    fn draw_line<S: BackendStyle>(
        &mut self,
        from: BackendCoord,
        to: BackendCoord,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_line(from, to, style)
    }

    fn draw_rect<S: BackendStyle>(
        &mut self,
        upper_left: BackendCoord,
        bottom_right: BackendCoord,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_rect(upper_left, bottom_right, style, fill)
    }

    fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        path: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_path(path, style)
    }

    fn draw_circle<S: BackendStyle>(
        &mut self,
        center: BackendCoord,
        radius: u32,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_circle(center, radius, style, fill)
    }

    fn fill_polygon<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        vert: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.fill_polygon(vert, style)
    }

    fn blit_bitmap(
        &mut self,
        pos: BackendCoord,
        size: (u32, u32),
        src: &[u8],
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.blit_bitmap(pos, size, src)
    }

    fn estimate_text_size<S: BackendTextStyle>(
        &self,
        text: &str,
        style: &S,
    ) -> Result<(u32, u32), DrawingErrorKind<Self::ErrorType>> {
        let laid = layout(&self.font, style.size() as f32, text);
        Ok((laid.width.ceil() as u32, laid.height.ceil() as u32))
    }

    /// The text's box is `width × (ascent − descent)`, placed by the style's anchor at
    /// `pos` and turned by its transform about `pos`, as plotters' own `draw_text` does.
    fn draw_text<S: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &S,
        pos: BackendCoord,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        let color = style.color();
        if color.alpha == 0.0 {
            return Ok(());
        }
        let size = style.size() as f32;
        let laid = layout(&self.font, size, text);
        let anchor = style.anchor();
        let dx = match anchor.h_pos {
            HPos::Left => 0.0,
            HPos::Center => -laid.width / 2.0,
            HPos::Right => -laid.width,
        };
        let dy = match anchor.v_pos {
            VPos::Top => 0.0,
            VPos::Center => -laid.height / 2.0,
            VPos::Bottom => -laid.height,
        };
        let transform = style.transform();
        let mut coverage = Vec::new();
        for (id, x) in laid.glyphs {
            let glyph = id.with_scale_and_position(size, point(dx + x, dy + laid.ascent));
            let Some(outline) = self.font.outline_glyph(glyph) else {
                continue; // a space
            };
            let bounds = outline.px_bounds();
            coverage.clear();
            outline.draw(|gx, gy, c| coverage.push((gx, gy, c)));
            for &(gx, gy, c) in &coverage {
                let (x, y) = (
                    bounds.min.x as i32 + gx as i32,
                    bounds.min.y as i32 + gy as i32,
                );
                let (x, y) = transform.transform(x, y);
                let alpha = color.alpha * f64::from(c.clamp(0.0, 1.0));
                let pixel = BackendColor {
                    alpha,
                    rgb: color.rgb,
                };
                self.inner.draw_pixel((pos.0 + x, pos.1 + y), pixel)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dejavu() -> FontRef<'static> {
        FontRef::try_from_slice(dejavu::sans::regular()).expect("the embedded font")
    }

    #[test]
    fn pen_positions_grow_by_each_advance() {
        let font = dejavu();
        let laid = layout(&font, 13.0, "Time");
        let xs: Vec<f32> = laid.glyphs.iter().map(|(_, x)| *x).collect();
        assert_eq!(xs[0], 0.0);
        assert!(xs.windows(2).all(|w| w[1] > w[0]), "{xs:?}");
        assert!((25.0..45.0).contains(&laid.width), "{}", laid.width);
        assert!((13.0..17.0).contains(&laid.height), "{}", laid.height);
        assert_eq!(layout(&font, 13.0, "").width, 0.0);
    }

    /// The ink of a drawn text spans the width `estimate_text_size` reports, from where
    /// the anchor puts it: what the axis labels and the legend are laid out with.
    #[test]
    fn drawn_text_fills_its_estimated_box() {
        use plotters::backend::BitMapBackend;
        use plotters::prelude::*;
        let (w, h) = (200_u32, 40_u32);
        let mut pixels = vec![255_u8; (w * h * 3) as usize];
        let style = TextStyle::from(("sans-serif", 16).into_font()).color(&BLACK);
        let text = "Time (UTC) 22:13";
        let estimated = {
            let mut backend =
                GlyphText::new(BitMapBackend::with_buffer(&mut pixels, (w, h)), dejavu());
            let size = backend.estimate_text_size(text, &style).expect("estimate");
            backend.draw_text(text, &style, (10, 10)).expect("draw");
            backend.present().expect("present");
            size
        };
        let inked: Vec<u32> = (0..w)
            .filter(|&x| (0..h).any(|y| pixels[((y * w + x) * 3) as usize] < 128))
            .collect();
        let (first, last) = (inked[0], inked[inked.len() - 1]);
        assert!((10..=12).contains(&first), "ink starts at x = {first}");
        let drawn = last + 1 - first;
        assert!(
            drawn.abs_diff(estimated.0) <= 3,
            "drawn {drawn} px wide, estimated {}",
            estimated.0
        );
    }
}
