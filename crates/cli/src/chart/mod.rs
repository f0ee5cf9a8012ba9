//! Line charts of time series, drawn with plotters into a PNG or an SVG file: a title, a
//! UTC time axis, a value axis, one line per series in its own colour, a legend under the
//! plot. The image is made in memory ([`render`]); writing it is the only I/O ([`draw`]).
//! The data arrives as a [`Chart`].
//!
//! Text is drawn with DejaVu Sans compiled into the binary (registered with plotters as
//! "sans-serif"), so a chart looks the same on every machine and needs no system fonts.
//!
//! # Layout
//! - `time_axis.rs`: ticks at round UTC times, labels that fit the range.
//! - `value_axis.rs`: the value range shown and its labels.
//! - `lines.rs`: a series cut into the runs a line joins (not across gaps).
//! - `legend.rs`, `palette.rs`: the legend and the series' colours.

mod glyphs;
mod legend;
mod lines;
mod palette;
mod time_axis;
mod value_axis;

use glyphs::GlyphText;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::{FontStyle, TextStyle};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use time_axis::TimeAxis;

/// What to draw.
pub struct Chart {
    pub title: String,
    /// The value axis' caption (the field, say).
    pub value_caption: String,
    /// The range asked for (ns; start inclusive, end exclusive); the axis spans it and
    /// every point, and the data's own bounds where it is open.
    pub start: Option<i64>,
    pub end: Option<i64>,
    pub lines: Vec<Line>,
}

/// One series: its name in the legend and its points in time order (ns, value; `None` or
/// a non-finite value is a hole in the line).
pub struct Line {
    pub label: String,
    pub points: Vec<(i64, Option<f64>)>,
}

/// The image's size in pixels, within [`ImageSize::MIN`] and [`ImageSize::MAX`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ImageSize {
    width: u32,
    height: u32,
}

impl ImageSize {
    /// Below this the axes' labels and the legend leave no room for the plot.
    pub const MIN: (u32, u32) = (320, 200);
    /// A PNG is drawn in memory at 3 bytes a pixel: 8000 × 8000 is 192 MB.
    pub const MAX: (u32, u32) = (8000, 8000);

    pub fn new(width: u32, height: u32) -> Result<Self, ChartError> {
        let check = |name, value, min, max| match (min..=max).contains(&value) {
            true => Ok(()),
            false => Err(ChartError::BadSize {
                name,
                value,
                min,
                max,
            }),
        };
        check("width", width, Self::MIN.0, Self::MAX.0)?;
        check("height", height, Self::MIN.1, Self::MAX.1)?;
        Ok(Self { width, height })
    }
}

/// The image format, chosen by the file's extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImageFormat {
    Png,
    Svg,
}

impl ImageFormat {
    pub fn of_path(path: &Path) -> Result<Self, ChartError> {
        let extension = path.extension().and_then(|e| e.to_str());
        match extension.map(str::to_ascii_lowercase).as_deref() {
            Some("png") => Ok(Self::Png),
            Some("svg") => Ok(Self::Svg),
            _ => Err(ChartError::UnknownFormat {
                path: path.to_path_buf(),
            }),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ChartError {
    #[error("{}: unknown image format; the file name must end in .png or .svg", path.display())]
    UnknownFormat { path: PathBuf },
    #[error("--{name} must be between {min} and {max} pixels, not {value}")]
    BadSize {
        name: &'static str,
        value: u32,
        min: u32,
        max: u32,
    },
    #[error("no points to draw")]
    NoPoints,
    #[error("the embedded font DejaVu Sans could not be loaded")]
    Font,
    #[error("cannot draw the chart: {0}")]
    Draw(String),
    #[error("cannot encode the PNG: {0}")]
    Encode(#[from] png::EncodingError),
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Draws `chart` into the file at `path`, a PNG or an SVG by its extension (the file is
/// replaced once the image is complete). Refuses a chart without a finite value
/// ([`ChartError::NoPoints`]).
pub fn draw(chart: &Chart, size: ImageSize, path: &Path) -> Result<(), ChartError> {
    let image = render(chart, size, ImageFormat::of_path(path)?)?;
    std::fs::write(path, image).map_err(|source| ChartError::Write {
        path: path.to_path_buf(),
        source,
    })
}

/// The bytes of `chart` drawn as a PNG or an SVG file.
pub fn render(chart: &Chart, size: ImageSize, format: ImageFormat) -> Result<Vec<u8>, ChartError> {
    register_font()?;
    let bounds = Bounds::of(chart).ok_or(ChartError::NoPoints)?;
    let dimensions = (size.width, size.height);
    let failed = |e: &dyn std::fmt::Display| ChartError::Draw(e.to_string());
    match format {
        ImageFormat::Png => {
            // RGB, 3 bytes a pixel; at most 192 MB (ImageSize::MAX).
            let mut pixels = vec![0u8; size.width as usize * size.height as usize * 3];
            {
                let bitmap = BitMapBackend::with_buffer(&mut pixels, dimensions);
                let root = GlyphText::new(bitmap, font()?).into_drawing_area();
                draw_on(&root, chart, &bounds)
                    .and_then(|()| root.present())
                    .map_err(|e| failed(&e))?;
            }
            Ok(encode_png(&pixels, size)?)
        }
        ImageFormat::Svg => {
            let mut svg = String::new();
            {
                let root = SVGBackend::with_string(&mut svg, dimensions).into_drawing_area();
                draw_on(&root, chart, &bounds)
                    .and_then(|()| root.present())
                    .map_err(|e| failed(&e))?;
            }
            Ok(svg.into_bytes())
        }
    }
}

/// `pixels` (RGB, row by row) as a PNG file. The png crate directly rather than plotters'
/// encoder, which brings the image crate with JPEG and BMP codecs the binary has no use for.
fn encode_png(pixels: &[u8], size: ImageSize) -> Result<Vec<u8>, png::EncodingError> {
    let mut file = Vec::new();
    let mut encoder = png::Encoder::new(&mut file, size.width, size.height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header()?;
    writer.write_image_data(pixels)?;
    writer.finish()?;
    Ok(file)
}

/// plotters looks fonts up by family name in a process-wide table; the first chart fills it.
fn register_font() -> Result<(), ChartError> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let ok = REGISTERED.get_or_init(|| {
        plotters::style::register_font("sans-serif", FontStyle::Normal, dejavu::sans::regular())
            .is_ok()
    });
    match ok {
        true => Ok(()),
        false => Err(ChartError::Font),
    }
}

/// The embedded DejaVu Sans for the PNG text ([`GlyphText`]).
fn font() -> Result<ab_glyph::FontRef<'static>, ChartError> {
    ab_glyph::FontRef::try_from_slice(dejavu::sans::regular()).map_err(|_| ChartError::Font)
}

/// The time and value ranges the axes show.
struct Bounds {
    start: i64,
    end: i64,
    values: std::ops::Range<f64>,
}

impl Bounds {
    /// `None` when no series holds a finite value.
    fn of(chart: &Chart) -> Option<Self> {
        let series = || chart.lines.iter().map(|l| l.points.as_slice());
        let (first, last) = lines::time_bounds(series())?;
        let (low, high) = lines::value_bounds(series())?;
        Some(Self {
            start: chart.start.map_or(first, |s| s.min(first)),
            end: chart.end.map_or(last, |e| e.max(last)),
            values: value_axis::padded_range(low, high),
        })
    }
}

const TITLE_SIZE: u32 = 22;
const TEXT_SIZE: u32 = 14;
/// Room a time label gets: "11-15 00:00" is about 75 px wide.
const PIXELS_PER_TIME_LABEL: u32 = 100;
const PIXELS_PER_VALUE_LABEL: u32 = 50;

fn text_style(size: u32) -> TextStyle<'static> {
    ("sans-serif", size).into_font().color(&BLACK)
}

fn draw_on<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    chart: &Chart,
    bounds: &Bounds,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    root.fill(&WHITE)?;
    let (width, height) = root.dim_in_pixel();
    let title = fit_text(
        root,
        &chart.title,
        &text_style(TITLE_SIZE),
        width.saturating_sub(20),
    )?;
    let body = root
        .margin(8, 0, 0, 0)
        .titled(&title, text_style(TITLE_SIZE))?;

    let text = text_style(TEXT_SIZE);
    let labels: Vec<&str> = chart.lines.iter().map(|l| l.label.as_str()).collect();
    let label_widths = labels
        .iter()
        .map(|l| root.estimate_text_size(l, &text).map(|(w, _)| w))
        .collect::<Result<Vec<u32>, _>>()?;
    // The legend takes at most a quarter of the image; the plot keeps the rest.
    let max_rows = (height / 4 / legend::ROW_HEIGHT) as usize;
    let layout = legend::Layout::new(&label_widths, width, max_rows);
    let (_, body_height) = body.dim_in_pixel();
    let (plot, legend_area) = body.split_vertically(body_height.saturating_sub(layout.height()));

    draw_plot(&plot, chart, bounds)?;
    let fitted = labels
        .iter()
        .map(|l| fit_text(root, l, &text, layout.label_room()))
        .collect::<Result<Vec<String>, _>>()?;
    legend::draw(&legend_area, &layout, &fitted, &text)
}

/// The axes, the grid and the lines.
fn draw_plot<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    chart: &Chart,
    bounds: &Bounds,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let (width, height) = area.dim_in_pixel();
    let text = text_style(TEXT_SIZE);
    let values = bounds.values.clone();
    let span = values.end - values.start;
    let value_label = |v: &f64| value_axis::label(*v, span);
    // Wide enough for the longer of the range's end labels, and the caption beside them.
    let widest_value = [values.start, values.end]
        .iter()
        .map(|v| {
            area.estimate_text_size(&value_label(v), &text)
                .map(|(w, _)| w)
        })
        .collect::<Result<Vec<u32>, _>>()?
        .into_iter()
        .max()
        .unwrap_or(0);
    let time = TimeAxis::new(
        bounds.start,
        bounds.end,
        (width / PIXELS_PER_TIME_LABEL) as usize,
    );
    let caption = time.caption();

    let mut plot = ChartBuilder::on(area)
        .margin_left(10)
        .margin_top(5)
        // The last time label is centred on its tick and may reach past the plot.
        .margin_right(45)
        .x_label_area_size(50)
        .y_label_area_size(widest_value + 40)
        .build_cartesian_2d(time, values)?;
    plot.configure_mesh()
        .y_labels((height / PIXELS_PER_VALUE_LABEL).max(2) as usize)
        .y_label_formatter(&value_label)
        .label_style(text.clone())
        .axis_desc_style(text.clone())
        .x_desc(caption)
        .y_desc(chart.value_caption.as_str())
        .bold_line_style(RGBColor(0xdd, 0xdd, 0xdd))
        .light_line_style(TRANSPARENT)
        .draw()?;

    for (i, line) in chart.lines.iter().enumerate() {
        let color = palette::color(i);
        for run in lines::runs(&line.points) {
            match run.as_slice() {
                [single] => {
                    plot.draw_series(std::iter::once(Circle::new(*single, 3, color.filled())))?
                }
                _ => plot.draw_series(LineSeries::new(run, color.stroke_width(2)))?,
            };
        }
    }
    Ok(())
}

/// `text`, cut and ended with "…" where it is wider than `room` pixels.
fn fit_text<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    text: &str,
    style: &TextStyle,
    room: u32,
) -> Result<String, DrawingAreaErrorKind<DB::ErrorType>> {
    if area.estimate_text_size(text, style)?.0 <= room {
        return Ok(text.to_string());
    }
    let mut chars: Vec<char> = text.chars().collect();
    while !chars.is_empty() {
        chars.pop();
        let cut = format!("{}…", chars.iter().collect::<String>());
        if area.estimate_text_size(&cut, style)?.0 <= room {
            return Ok(cut);
        }
    }
    Ok("…".to_string())
}
