//! The client against real servers.

use claij_mcp::Failure;
use serde_json::json;

use crate::servers;

#[tokio::test]
async fn smoke_everything_and_time() {
    let Some(dir) = servers::require("smoke") else {
        return;
    };
    let everything = servers::connect("everything", servers::everything(&dir)).await;
    let time = servers::connect("time", servers::time(&dir)).await;
    eprintln!("{:?} / {:?}", everything.server_info(), time.server_info());
    let echo = everything
        .call("echo", json!({"message": "hi"}))
        .await
        .unwrap();
    assert_eq!(echo.text(), "Echo: hi");
    let unknown_ts = everything.call("no_such_tool", json!({})).await.unwrap();
    let unknown_py = time.call("no_such_tool", json!({})).await.unwrap();
    assert!(matches!(
        unknown_ts.failure,
        Some(Failure::UnknownTool { .. })
    ));
    assert!(matches!(
        unknown_py.failure,
        Some(Failure::UnknownTool { .. })
    ));
    let now = time
        .call("get_current_time", json!({"timezone": "UTC"}))
        .await
        .unwrap();
    assert!(!now.is_error, "{now}");
    assert!(now.structured.is_some());
    let bad = time
        .call("get_current_time", json!({"timezone": 5}))
        .await
        .unwrap();
    assert!(
        matches!(bad.failure, Some(Failure::InvalidArguments { .. })),
        "{bad}"
    );
    everything.close().await;
    time.close().await;
}
