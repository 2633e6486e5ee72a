//! `fsbench report`: a report of real results, opened in headless Chromium. Checks the page's
//! script ran (marker in the dumped DOM, i.e. no script error), every expected chart is there
//! with an SVG, and the screenshot is not blank. Skips with a reason where no browser exists.

use crate::common::*;
use std::path::Path;
use std::process::Command;

fn browser() -> Option<String> {
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find(|b| {
            Command::new(b)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
        .map(|b| b.to_string())
}

fn results(dir: &Scratch, threads: &str) -> String {
    let json = dir.path().join(format!("threads-{threads}.json"));
    let o = run(&[
        "run",
        "fileserver",
        "-s",
        "nfiles=20",
        "-s",
        "filesize=8k",
        "-s",
        &format!("nthreads={threads}"),
        "--duration",
        "0.4",
        "--interval",
        "0.1",
        "--repeat",
        "3",
        "--dir",
        dir.s(),
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    json.to_str().unwrap().to_string()
}

#[test]
fn report_renders_in_a_browser() {
    let dir = Scratch::new("report");
    let a = results(&dir, "1");
    let b = results(&dir, "2");
    let html = dir.path().join("report.html");
    let o = run(&[
        "report",
        &a,
        &b,
        "--label",
        "one thread",
        "--label",
        "two threads",
        "-o",
        html.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let page = std::fs::read_to_string(&html).unwrap();
    // Self-contained: nothing loaded from elsewhere.
    for bad in ["src=", "<link", "@import", "url("] {
        assert!(
            !page.contains(bad),
            "the page refers to an outside resource ({bad})"
        );
    }
    assert!(!page.contains("chart failed"), "a chart failed to draw");
    assert!(
        page.contains("one thread") && page.contains("two threads"),
        "the --label names are not the configurations' labels"
    );
    // Expected charts: the key figures, throughput per flowop, the nthreads factor, a CDF per
    // flowop, the series.
    let r: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&a).unwrap()).unwrap();
    let nflowops = r["flowops"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["ops"].as_u64().unwrap() > 0)
        .count();
    let mut ids: Vec<String> = [
        "g0-bar-ops",
        "g0-bar-mbps",
        "g0-bar-lat",
        "g0-bar-p99",
        // Per-flowop throughput: fileserver's writes, appends and reads move data.
        "g0-flowop-mbps",
        "g0-factor",
        "g0-series",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for (i, f) in r["flowops"].as_array().unwrap().iter().enumerate() {
        if f["ops"].as_u64().unwrap() > 0 {
            ids.push(format!("g0-cdf-{i}"));
        }
    }
    assert!(nflowops > 3);

    check_in_browser(&dir, &html, &ids);
}

/// Open the page in headless Chromium: its script ran to the end and counted `ids.len()`
/// charts, each expected chart draws something, and a screenshot is not blank.
fn check_in_browser(dir: &Scratch, html: &Path, ids: &[String]) -> Option<String> {
    let Some(br) = browser() else {
        skip("skipping the browser checks: no chromium installed (apt-get install chromium)");
        return None;
    };
    let url = format!("file://{}", html.display());
    let dom = Command::new(&br)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--dump-dom",
            &url,
        ])
        .output()
        .unwrap();
    assert!(dom.status.success(), "{}", text(&dom));
    let dom = String::from_utf8_lossy(&dom.stdout);
    let expected = ids.len();
    assert!(
        dom.contains(&format!("data-report-ready=\"{expected}\"")),
        "the page's script did not run to the end or saw a different chart count (want {expected})"
    );
    for id in ids {
        let at = dom
            .find(&format!("id=\"{id}\""))
            .unwrap_or_else(|| panic!("chart {id} missing"));
        let fig = &dom[at..];
        let end = fig.find("</figure>").unwrap();
        assert!(fig[..end].contains("<svg"), "chart {id} has no SVG");
        assert!(
            fig[..end].contains("<rect") || fig[..end].contains("<polyline"),
            "chart {id} draws nothing"
        );
    }

    let png = dir.path().join("report.png");
    let shot = Command::new(&br)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--window-size=1200,1600",
            &format!("--screenshot={}", png.display()),
            &url,
        ])
        .output()
        .unwrap();
    assert!(shot.status.success(), "{}", text(&shot));
    assert_not_blank(&png);
    Some(dom.to_string())
}

/// Decodes the PNG and checks the pixels vary (a blank or failed page is uniform).
fn assert_not_blank(png: &Path) {
    let dec = png::Decoder::new(std::fs::File::open(png).unwrap());
    let mut reader = dec.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let bytes = &buf[..info.buffer_size()];
    let n = bytes.len() as f64;
    let mean = bytes.iter().map(|b| *b as f64).sum::<f64>() / n;
    let var = bytes
        .iter()
        .map(|b| (*b as f64 - mean).powi(2))
        .sum::<f64>()
        / n;
    let non_white = bytes
        .chunks(info.color_type.samples())
        .filter(|p| p.iter().take(3).any(|c| *c < 200))
        .count();
    assert!(
        info.width >= 1000 && info.height >= 1000,
        "{}x{}",
        info.width,
        info.height
    );
    assert!(var > 100.0, "screenshot looks blank (variance {var:.1})");
    assert!(
        non_white > 10_000,
        "screenshot has only {non_white} non-white pixels"
    );
}

#[test]
fn experiment_report_renders_in_a_browser() {
    // An experiment writes its report itself: a workload with a numeric factor crossed with
    // a two-level target factor compared against its baseline, an application benchmark's
    // named figures and a layout measurement's figures.
    let dir = Scratch::new("report-exp");
    let (here, there) = (dir.path().join("here"), dir.path().join("there"));
    std::fs::create_dir_all(&here).unwrap();
    std::fs::create_dir_all(&there).unwrap();
    let plan = dir.path().join("p.toml");
    std::fs::write(
        &plan,
        format!(
            r#"[experiment]
name = "r"
repetitions = 2
baseline = {{ target = "here" }}

[[target]]
name = "here"
kind = "dir"
path = "{}"

[[target]]
name = "there"
kind = "dir"
path = "{}"

[factors]
target = ["here", "there"]

[[measurement]]
name = "fs"
kind = "workload"
params = {{ workload = "fileserver", nfiles = 200, filesize = "4k", duration = 0.3 }}
factors = {{ nthreads = [1, 2] }}

[[measurement]]
name = "walk"
kind = "find"
params = {{ tree_files = 40, tree_dirs = 4 }}

[[measurement]]
name = "lay"
kind = "layout"
"#,
            here.display(),
            there.display()
        ),
    )
    .unwrap();
    let out = dir.path().join("out");
    experiment_ok(&plan, &out);
    let html = out.join("report.html");
    let page = std::fs::read_to_string(&html).unwrap();
    let ids: Vec<String> = page
        .split("<figure class=chart id=\"")
        .skip(1)
        .map(|s| s[..s.find('"').unwrap()].to_string())
        .collect();
    for want in ["g0-factor", "g0-bar-p99", "g1-fig-0"] {
        assert!(ids.iter().any(|i| i == want), "no chart {want} in {ids:?}");
    }
    assert!(page.contains("<h2>lay</h2>") && page.contains("nthreads=2"));
    // The header names every target; figures that are the same in every cell (a layout's
    // error count) are a table, not one-bar charts.
    assert!(
        page.contains("here: ") && page.contains("there: "),
        "targets missing from the header"
    );
    let lay = &page[page.find("<h2>lay</h2>").unwrap()..];
    let constants = &lay[lay
        .find("class=constants")
        .expect("no table of constant figures")..];
    assert!(constants[..constants.find("</table>").unwrap()].contains("<td>errors</td>"));
    // The workload opens with the comparisons: one chart per headline figure, one ratio
    // per level of the other factor (nthreads), equal to the ratio of the two cells' means.
    let fs = &page[page.find("<h2>fs</h2>").unwrap()..page.find("<h2>walk</h2>").unwrap()];
    let first_cmp = fs
        .find("<figure class=\"comparison\"")
        .expect("no comparison in fs");
    assert!(
        first_cmp < fs.find("<figure class=chart").unwrap(),
        "comparisons do not lead"
    );
    for figure in ["ops_per_s", "mb_per_s", "p99_ms"] {
        let tag = "<figure class=\"comparison\" id=\"g0-cmp-0-";
        let at = fs
            .match_indices(tag)
            .map(|(i, _)| &fs[i..])
            .find(|f| f[..f.find('>').unwrap()].contains(&format!("data-figure=\"{figure}\"")))
            .unwrap_or_else(|| panic!("no comparison chart of {figure}"));
        let fig = &at[..at.find("</figure>").unwrap()];
        assert!(
            fig.contains("data-factor=\"target\" data-baseline=\"here\""),
            "{fig}"
        );
        assert_eq!(fig.matches("<td>there ÷ here</td>").count(), 2, "{fig}");
        for n in ["1", "2"] {
            let want = cell_mean(&out, "there", n, figure) / cell_mean(&out, "here", n, figure);
            let row = format!("<td>there ÷ here</td><td>nthreads={n}</td><td>{want:.4}</td>");
            assert!(fig.contains(&row), "{row} not in {fig}");
        }
    }
    let dom = check_in_browser(&dir, &html, &ids);
    if let Some(dom) = dom {
        let n = page.matches("<figure class=\"comparison\"").count();
        assert!(n >= 3 * 2, "{n} comparison charts");
        let drawn = dom
            .split("<figure class=\"comparison\"")
            .skip(1)
            .filter(|f| {
                let f = &f[..f.find("</figure>").unwrap()];
                f.contains("<svg") && f.contains("<rect")
            })
            .count();
        assert_eq!(
            drawn, n,
            "comparison charts that draw nothing in the browser"
        );
    }
}

/// The mean of a whole-run figure over a fileserver cell's stored runs, straight from the
/// database.
fn cell_mean(out: &Path, target: &str, nthreads: &str, figure: &str) -> f64 {
    let db = rusqlite::Connection::open(out.join("results.db")).unwrap();
    db.query_row(
        "SELECT AVG(figures.value) FROM figures JOIN runs ON runs.id = figures.run_id JOIN cells ON cells.id = runs.cell_id \
         WHERE cells.measurement = 'fs' AND json_extract(cells.factors_json, '$.target') = ?1 \
         AND json_extract(cells.factors_json, '$.nthreads') = ?2 AND figures.flowop = '' AND figures.figure = ?3 \
         AND runs.status = 'ok' AND runs.superseded = 0",
        [target, nthreads, figure],
        |r| r.get(0),
    )
    .unwrap()
}

#[test]
fn aging_reports_get_an_aging_section() {
    // `fsbench age --json` files beside (or instead of) run results: a table of fullness,
    // operations and distance to the profile, and layout score and fragments before/after.
    let dir = Scratch::new("report-age");
    let aged = dir.path().join("aged");
    std::fs::create_dir_all(&aged).unwrap();
    let json = dir.path().join("churn.json");
    let o = run(&[
        "age",
        aged.to_str().unwrap(),
        "--fill",
        "0.0001",
        "--ops",
        "200",
        "--json",
        json.to_str().unwrap(),
        "-q",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let html = dir.path().join("r.html");
    let o = run(&[
        "report",
        json.to_str().unwrap(),
        "-o",
        html.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let page = std::fs::read_to_string(&html).unwrap();
    for want in [
        "<h2>Aging</h2>",
        "id=\"aging-score\"",
        "id=\"aging-fragments\"",
        "churn before",
        "churn after",
        // Each distribution against the profile, and files by fragments before/after.
        "id=\"aging-0-size\"",
        "id=\"aging-0-depth\"",
        "id=\"aging-0-age\"",
        "id=\"aging-0-fragments-per-file\"",
        "churn: size distribution, profile against aged",
        "profile (% of files)",
        "files by number of fragments",
    ] {
        assert!(page.contains(want), "report lacks {want}");
    }
    // The profile's shares are in the table beside the chart: agrawal's smallest size
    // bucket holds 0.43% of files.
    assert!(
        page.contains("<td>0.43</td>"),
        "no profile shares in the table"
    );
    let ids: Vec<String> = page
        .split("<figure class=chart id=\"")
        .skip(1)
        .map(|s| s[..s.find('"').unwrap()].to_string())
        .collect();
    assert_eq!(ids.len(), 6, "{ids:?}");
    check_in_browser(&dir, &html, &ids);
}
