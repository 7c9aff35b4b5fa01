{
  "variables": {
    "trickle_bpf%": "0",
    "trickle_prebuild%": "0",
    "trickle_static_libs%": ""
  },
  "targets": [
    {
      "target_name": "trickle_native",
      "sources": ["addon/addon.cc", "addon/tcp_info.cc", "addon/bpf_clamp.cc", "addon/file_sender.cc"],
      "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")", "bpf", "out/bpf"],
      "defines": ["NAPI_VERSION=8", "NAPI_CPP_EXCEPTIONS"],
      "cflags_cc": ["-std=c++17", "-fexceptions", "-Wall", "-Wextra"],
      "cflags_cc!": ["-fno-exceptions"],
      "conditions": [
        ["trickle_bpf==1", {
          "defines": ["TRICKLE_HAVE_BPF=1"],
          "conditions": [
            ["trickle_prebuild==1", {
              "include_dirs": ["<(trickle_static_libs)/include"],
              "libraries": ["<(trickle_static_libs)/libbpf.a", "<(trickle_static_libs)/libelf.a", "<(trickle_static_libs)/libz.a"]
            }, {
              "libraries": ["-lbpf", "-lelf", "-lz"]
            }]
          ]
        }]
      ]
    }
  ]
}
