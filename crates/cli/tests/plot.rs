//! `tickertape plot` through the real binary: a store with several series drawn into a PNG
//! (decoded and its pixels counted) and an SVG (its text read), and the errors.

mod support;

use std::path::{Path, PathBuf};
use support::{import, text, tickertape};

/// The first colours of the chart's palette (`src/chart/palette.rs`, Tableau 10): series
/// `i` is drawn in colour `i`.
const SERIES_COLOURS: [[u8; 3]; 4] = [
    [0x4e, 0x79, 0xa7],
    [0xf2, 0x8e, 0x2b],
    [0xe1, 0x57, 0x59],
    [0x76, 0xb7, 0xb2],
];

/// A store with three series of `temp` (rooms a, b, c), a point every 10 s for an hour
/// from 2023-11-14T22:13:20Z, each on its own level and with its own wave.
fn store_with_three_series(dir: &Path) -> PathBuf {
    let store = dir.join("store");
    let file = dir.join("data.lp");
    let mut lines = String::new();
    for i in 0..360u32 {
        let t = 1_700_000_000 + 10 * i64::from(i);
        let x = f64::from(i) / 20.0;
        for (room, level) in [("a", 10.0), ("b", 20.0), ("c", 30.0)] {
            let value = level + 3.0 * (x + level).sin();
            lines.push_str(&format!("temp,room={room},site=lab celsius={value} {t}\n"));
        }
    }
    std::fs::write(&file, lines).unwrap();
    let out = import(&store, &file);
    assert!(out.status.success(), "{}", text(&out.stderr));
    store
}

/// The PNG's size and its pixels as RGB triples, row by row.
fn decode_png(path: &Path) -> (u32, u32, Vec<[u8; 3]>) {
    let decoder = png::Decoder::new(std::fs::File::open(path).unwrap());
    let mut reader = decoder.read_info().unwrap();
    let mut buffer = vec![0; reader.output_buffer_size()];
    let frame = reader.next_frame(&mut buffer).unwrap();
    assert_eq!(frame.color_type, png::ColorType::Rgb, "plotters writes RGB");
    assert_eq!(frame.bit_depth, png::BitDepth::Eight);
    let pixels = buffer[..frame.buffer_size()]
        .chunks_exact(3)
        .map(|p| [p[0], p[1], p[2]])
        .collect();
    (frame.width, frame.height, pixels)
}

#[test]
fn plot_draws_each_series_in_its_colour_into_a_png_of_the_asked_size() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_with_three_series(dir.path());
    let png_path = dir.path().join("temp.png");
    let out = tickertape(&[
        "plot",
        "--store",
        store.to_str().unwrap(),
        "-m",
        "temp",
        "-f",
        "celsius",
        // With a start and no step, plot asks for at most --width points per series.
        "--start",
        "2023-11-14T22:00:00Z",
        "--end",
        "2023-11-14T23:30:00Z",
        "-o",
        png_path.to_str().unwrap(),
        "--width",
        "900",
        "--height",
        "450",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("(3 series)"),
        "{}",
        text(&out.stderr)
    );

    let (width, height, pixels) = decode_png(&png_path);
    assert_eq!((width, height), (900, 450));
    // Above the legend (the bottom quarter at most) and below the title: the plot area.
    let plot_area = |colour: [u8; 3]| {
        pixels
            .iter()
            .enumerate()
            .filter(|(i, p)| {
                let (x, y) = ((*i as u32) % width, (*i as u32) / width);
                (40..height * 3 / 4).contains(&y) && (60..width - 30).contains(&x) && **p == colour
            })
            .count()
    };
    // A 2 px line across most of 900 px is well over a thousand pixels.
    for (series, colour) in SERIES_COLOURS[..3].iter().enumerate() {
        let count = plot_area(*colour);
        assert!(
            count > 1000,
            "series {series}: {count} pixels of {colour:?}"
        );
    }
    assert_eq!(
        plot_area(SERIES_COLOURS[3]),
        0,
        "a fourth colour for three series"
    );
    let white = pixels.iter().filter(|p| **p == [255, 255, 255]).count();
    assert!(white > pixels.len() / 2, "a white background");
}

/// `--url`: the same chart from a running server's answer (`tickertape serve` on the
/// store, asked over loopback), not from the store opened by the command.
#[test]
fn plot_asks_a_server_with_url() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_with_three_series(dir.path());
    let (mut server, url) = support::serve(&store);
    let svg_path = dir.path().join("temp.svg");
    let out = tickertape(&[
        "plot",
        "--url",
        &url,
        "-m",
        "temp",
        "--tag",
        "room=~a|b",
        "--start",
        "2023-11-14T22:00:00Z",
        "--end",
        "2023-11-14T23:30:00Z",
        "-o",
        svg_path.to_str().unwrap(),
    ]);
    let _ = server.kill();
    let _ = server.wait();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("(2 series)"),
        "{}",
        text(&out.stderr)
    );
    let texts = svg_texts(&std::fs::read_to_string(&svg_path).unwrap());
    for room in ["room=a", "room=b"] {
        assert!(
            texts.iter().any(|t| t.contains(room)),
            "{room} in {texts:?}"
        );
    }
    assert!(!texts.iter().any(|t| t.contains("room=c")), "{texts:?}");
}

/// The text of each `<text>` element of an SVG, trimmed (plotters puts it on a line of its
/// own), still XML-escaped.
fn svg_texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .filter_map(|element| {
            let content = element.split_once('>')?.1;
            Some(content.split_once("</text>")?.0.trim().to_string())
        })
        .collect()
}

#[test]
fn plot_writes_an_svg_with_the_title_and_the_legend() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_with_three_series(dir.path());
    let s = store.to_str().unwrap();
    let svg_path = dir.path().join("temp.svg");
    let svg = svg_path.to_str().unwrap();
    let out = tickertape(&["plot", "--store", s, "-m", "temp", "--output", svg]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let svg_text = std::fs::read_to_string(&svg_path).unwrap();
    assert!(svg_text.starts_with("<svg"), "{}", &svg_text[..100]);
    assert!(
        svg_text.contains(r#"width="1000" height="500""#),
        "the default size"
    );
    let texts = svg_texts(&svg_text);
    // The default title, the axes' captions, and the legend: the tag that tells the series
    // apart (the one they share, site=lab, is left out).
    for expected in [
        "temp",
        "celsius",
        "Time (UTC), 2023-11-14",
        "22:20",
        "celsius{room=a}",
        "celsius{room=b}",
        "celsius{room=c}",
    ] {
        assert!(
            texts.iter().any(|t| t == expected),
            "{expected:?} in {texts:?}"
        );
    }

    let out = tickertape(&[
        "plot",
        "--store",
        s,
        "-m",
        "temp",
        "--tag",
        "room:b",
        "--output",
        svg,
        "--title",
        "Room B & friends",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let texts = svg_texts(&std::fs::read_to_string(&svg_path).unwrap());
    assert_eq!(texts[0], "Room B &amp; friends", "the title first, escaped");
    assert!(
        texts.iter().any(|t| t == "celsius{room=b,site=lab}"),
        "a lone series: all its tags in {texts:?}"
    );
    assert!(!texts.iter().any(|t| t.contains("room=a")));
}

#[test]
fn plot_refuses_unknown_formats_absurd_sizes_and_empty_answers() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_with_three_series(dir.path());
    let s = store.to_str().unwrap();
    let plot = |extra: &[&str]| {
        let mut args = vec!["plot", "--store", s, "-m", "temp"];
        args.extend_from_slice(extra);
        let out = tickertape(&args);
        assert!(!out.status.success(), "{extra:?} should fail");
        text(&out.stderr)
    };

    let jpg = dir.path().join("chart.jpg");
    let err = plot(&["-o", jpg.to_str().unwrap()]);
    assert!(err.contains("chart.jpg: unknown image format"), "{err}");
    assert!(err.contains(".png or .svg"), "{err}");
    assert!(!jpg.exists());

    let err = plot(&["-o", "/nonexistent/chart.png"]);
    assert!(
        err.contains("cannot write /nonexistent/chart.png: /nonexistent is not a directory"),
        "{err}"
    );

    let png = dir.path().join("chart.png");
    let png = png.to_str().unwrap();
    let err = plot(&["-o", png, "--width", "0"]);
    assert!(
        err.contains("--width must be between 320 and 8000 pixels, not 0"),
        "{err}"
    );
    let err = plot(&["-o", png, "--height", "100000"]);
    assert!(
        err.contains("--height must be between 200 and 8000 pixels, not 100000"),
        "{err}"
    );

    let err = plot(&["-o", png, "--tag", "room:nowhere"]);
    assert!(
        err.contains("no points in temp with tags room:nowhere in the whole store"),
        "{err}"
    );
    let err = plot(&["-o", png, "--start", "2024-01-01T00:00:00Z"]);
    assert!(
        err.contains("no points in temp from 2024-01-01T00:00:00Z on"),
        "{err}"
    );
    assert!(!Path::new(png).exists(), "no image for an empty answer");
}
