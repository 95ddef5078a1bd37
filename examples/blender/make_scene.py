# Builds the example's scene with Blender's own Python, in background mode (no display needed):
#
#   blender -b --factory-startup --python make_scene.py -- OUT.blend [FRAMES [WIDTH HEIGHT [SAMPLES]]]
#
# A ground plane, a few shaded objects, a sun and a camera that circles them over FRAMES frames
# (default 48, at 24 fps: 2 seconds), WIDTH x HEIGHT pixels (default 320 x 180). Cycles on the
# CPU with few samples (default 16) and no denoiser, one
# render thread, so a frame renders in seconds on one core and on any machine, GPU or not (Eevee
# and Workbench need an OpenGL context, which a lent machine without a display does not have).
import math
import sys

import bpy

args = sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else []
if not args:
    sys.exit("usage: blender -b --factory-startup --python make_scene.py -- OUT.blend"
             " [FRAMES [WIDTH HEIGHT [SAMPLES]]]")
out = args[0]
frames = int(args[1]) if len(args) > 1 else 48
width = int(args[2]) if len(args) > 2 else 320
height = int(args[3]) if len(args) > 3 else 180
samples = int(args[4]) if len(args) > 4 else 16

# An empty scene: the factory startup's cube, light and camera go.
bpy.ops.wm.read_factory_settings(use_empty=True)
scene = bpy.context.scene


def material(name, rgb, roughness=0.5, metallic=0.0):
    m = bpy.data.materials.new(name)
    m.use_nodes = True
    bsdf = m.node_tree.nodes["Principled BSDF"]
    bsdf.inputs["Base Color"].default_value = (*rgb, 1.0)
    bsdf.inputs["Roughness"].default_value = roughness
    bsdf.inputs["Metallic"].default_value = metallic
    return m


def place(obj, mat):
    obj.data.materials.append(mat)
    return obj


bpy.ops.mesh.primitive_plane_add(size=20, location=(0, 0, 0))
place(bpy.context.object, material("ground", (0.35, 0.35, 0.32), roughness=0.9))
bpy.ops.mesh.primitive_cube_add(size=1.6, location=(-2.2, 0, 0.8), rotation=(0, 0, 0.4))
place(bpy.context.object, material("red", (0.8, 0.08, 0.05), roughness=0.35))
bpy.ops.mesh.primitive_uv_sphere_add(radius=1.0, location=(0.4, 1.6, 1.0), segments=48, ring_count=24)
bpy.ops.object.shade_smooth()
place(bpy.context.object, material("steel", (0.8, 0.8, 0.85), roughness=0.15, metallic=1.0))
bpy.ops.mesh.primitive_torus_add(location=(1.9, -1.2, 0.35), major_radius=0.9, minor_radius=0.35)
bpy.ops.object.shade_smooth()
place(bpy.context.object, material("blue", (0.05, 0.2, 0.8), roughness=0.4))
bpy.ops.mesh.primitive_monkey_add(size=1.2, location=(0, -0.2, 2.6), rotation=(0.3, 0, 0))
bpy.ops.object.shade_smooth()
place(bpy.context.object, material("gold", (0.9, 0.6, 0.1), roughness=0.3, metallic=1.0))

bpy.ops.object.light_add(type="SUN", location=(4, -4, 8), rotation=(0.7, 0.2, 0.6))
bpy.context.object.data.energy = 4.0
world = bpy.data.worlds.new("sky")
world.use_nodes = True
world.node_tree.nodes["Background"].inputs["Color"].default_value = (0.45, 0.6, 0.85, 1.0)
world.node_tree.nodes["Background"].inputs["Strength"].default_value = 0.8
scene.world = world

# The camera circles the objects once over the animation, always looking at the middle.
bpy.ops.object.empty_add(location=(0, 0, 1.3))
target = bpy.context.object
bpy.ops.object.camera_add()
camera = bpy.context.object
scene.camera = camera
camera.data.lens = 28
track = camera.constraints.new("TRACK_TO")
track.target = target
track.track_axis = "TRACK_NEGATIVE_Z"
track.up_axis = "UP_Y"
scene.frame_start = 1
scene.frame_end = frames
steps = 8
for i in range(steps + 1):
    angle = 2 * math.pi * i / steps
    camera.location = (9 * math.cos(angle), 9 * math.sin(angle), 4.5)
    camera.keyframe_insert(data_path="location", frame=1 + (frames - 1) * i / steps)
for fc in camera.animation_data.action.fcurves:
    for k in fc.keyframe_points:
        k.interpolation = "LINEAR"

render = scene.render
render.engine = "CYCLES"
render.resolution_x = width
render.resolution_y = height
render.resolution_percentage = 100
render.fps = 24
render.threads_mode = "FIXED"   # one thread: the job asks for one CPU per task
render.threads = 1
render.image_settings.file_format = "PNG"
scene.cycles.device = "CPU"
scene.cycles.samples = samples
scene.cycles.use_denoising = False
scene.cycles.use_adaptive_sampling = False
scene.cycles.max_bounces = 4

bpy.ops.wm.save_as_mainfile(filepath=out, compress=True)
print(f"make_scene: wrote {out}: {frames} frames at {width}x{height}, Cycles, {scene.cycles.samples} samples")
